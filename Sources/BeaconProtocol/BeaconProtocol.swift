// BeaconProtocol
