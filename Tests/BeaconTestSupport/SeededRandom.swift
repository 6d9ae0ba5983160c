/// Random numbers from a seed, so that a randomized test that fails fails again the same way: Knuth's MMIX linear
/// congruential generator, its high half taken twice for each 64-bit number (the low bits of an LCG repeat soon).
public struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    private mutating func step() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 32
    }

    public mutating func next() -> UInt64 {
        step() << 32 | step()
    }
}
