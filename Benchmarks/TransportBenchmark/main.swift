print("transport benchmark")
