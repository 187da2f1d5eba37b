print("quick tour")
