// BeaconSystemd
