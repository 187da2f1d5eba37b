print("hpack benchmark")
