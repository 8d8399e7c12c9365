/// How a room composes and mixes.
public struct RoomConfiguration: Sendable, Equatable {
    /// The composite's canvas until a template sets another, and its frame rate and bit rate.
    public var width = 1280
    public var height = 720
    public var fps = 30
    public var bitrate = 1_500_000
    /// The lower encoding, for receivers whose bandwidth estimate is low.
    public var lowWidth = 640
    public var lowHeight = 360
    public var lowBitrate = 500_000
    /// The small encoding, for receivers whose estimate is lower still (under it, no video).
    public var smallWidth = 320
    public var smallHeight = 180
    public var smallBitrate = 150_000
    /// The most voices a mix holds, the loudest (`RoomAudioMixer`'s Top K); 0 for no bound.
    public var maxVoices = 3
    /// Deliberate faults, for tests that show a checker catches a broken host.
    public var returnsOwnVoice = false
    public var camerasInWrongSlots = false

    public init() {}
}
