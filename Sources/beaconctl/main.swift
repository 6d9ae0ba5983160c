print("beaconctl: not built yet")
