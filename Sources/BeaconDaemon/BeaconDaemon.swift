// BeaconDaemon
