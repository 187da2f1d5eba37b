print("payload benchmark")
