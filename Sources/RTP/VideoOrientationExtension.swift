/// Coordination of video orientation, CVO (3GPP TS 26.114 §7.4.5): how the receiver must rotate
/// and flip the picture for display.
///
/// ```
///  0 1 2 3 4 5 6 7
/// +-+-+-+-+-+-+-+-+
/// |0 0 0 0 C F R R|
/// +-+-+-+-+-+-+-+-+
/// ```
public struct VideoOrientation: RTPHeaderExtensionValue, Hashable {
    /// Clockwise rotation the receiver applies, in quarter turns (R1 R0).
    public enum Rotation: UInt8, Sendable, CaseIterable {
        /// No rotation.
        case degrees0 = 0
        /// 90 degrees.
        case degrees90 = 1
        /// 180 degrees.
        case degrees180 = 2
        /// 270 degrees.
        case degrees270 = 3

        /// The angle in degrees.
        public var degrees: Int { Int(rawValue) * 90 }
    }

    /// C: the picture comes from a back-facing camera (false: front-facing or unknown).
    public var backFacingCamera: Bool
    /// F: the picture must be flipped horizontally.
    public var horizontalFlip: Bool
    /// R1 R0: the rotation to apply.
    public var rotation: Rotation

    /// An orientation with these fields.
    public init(backFacingCamera: Bool = false, horizontalFlip: Bool = false, rotation: Rotation = .degrees0) {
        self.backFacingCamera = backFacingCamera
        self.horizontalFlip = horizontalFlip
        self.rotation = rotation
    }

    /// `HeaderExtensionURI.videoOrientation`.
    public static var uri: HeaderExtensionURI { .videoOrientation }
    /// The stored id of the CVO extension.
    public static func id(in map: HeaderExtensionMap) -> UInt8? { map.videoOrientationID }

    /// Reads the first byte (the higher-granularity CVO form uses more bits of a longer element).
    public init(extensionData data: ArraySlice<UInt8>, id: UInt8) throws(RTPParseError) {
        guard let byte = data.first else { throw .invalidHeaderExtensionValue(id: id) }
        backFacingCamera = byte & 0x08 != 0
        horizontalFlip = byte & 0x04 != 0
        rotation = Rotation(rawValue: byte & 0x03) ?? .degrees0
    }

    /// The one byte.
    public var extensionData: [UInt8] {
        [(backFacingCamera ? 0x08 : 0) | (horizontalFlip ? 0x04 : 0) | rotation.rawValue]
    }
}
