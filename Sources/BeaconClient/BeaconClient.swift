// BeaconClient
