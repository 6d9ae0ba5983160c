print("beacond: not built yet")
