private import CVPX
import Wire

/// Why a VP8 encoder or decoder could not do what was asked: libvpx's error code and its words.
public enum VP8CodecError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A setting is out of the range the encoder accepts (which one, and why).
    case invalidConfiguration(String)
    /// libvpx refused to start the codec (`vpx_codec_enc_init` / `vpx_codec_dec_init`).
    case initializationFailed(String)
    /// libvpx refused to encode a picture.
    case encodeFailed(String)
    /// libvpx refused to change a setting while running (`vpx_codec_enc_config_set`, a control).
    case reconfigurationFailed(String)
    /// The bytes are not a VP8 frame libvpx can decode (corrupt, truncated or unsupported).
    case corruptFrame(String)
    /// An inter frame arrived before any key frame: nothing to predict it from.
    case waitingForKeyFrame
    /// A key frame announces a picture of no size or larger than the decoder accepts.
    case pictureTooLarge(width: Int, height: Int)
    /// The frame decoded, but from references damaged by earlier errors or loss: ask for a key
    /// frame (PLI) and show nothing until it comes.
    case corruptReference

    /// What went wrong, in words for a log.
    public var description: String {
        switch self {
        case .invalidConfiguration(let why): "VP8: invalid configuration: \(why)"
        case .initializationFailed(let why): "VP8: libvpx could not start the codec: \(why)"
        case .encodeFailed(let why): "VP8: encoding failed: \(why)"
        case .reconfigurationFailed(let why): "VP8: could not change the encoder's settings: \(why)"
        case .corruptFrame(let why): "VP8: the frame could not be decoded: \(why)"
        case .waitingForKeyFrame: "VP8: an inter frame came before any key frame"
        case .pictureTooLarge(let width, let height): "VP8: a key frame of \(width)x\(height) is empty or larger than the decoder accepts"
        case .corruptReference: "VP8: the frame refers to a damaged picture; a key frame is needed"
        }
    }
}

/// libvpx's words for an error on `context`, or for `code` alone.
private func vpxErrorText(_ context: UnsafeMutablePointer<vpx_codec_ctx_t>?, _ code: vpx_codec_err_t) -> String {
    var text = String(cString: vpx_codec_err_to_string(code))
    if let context, let detail = vpx_codec_error_detail(context) { text += " (\(String(cString: detail)))" }
    return text
}

/// One compressed VP8 frame, ready for the packetizer (RFC 7741).
public struct EncodedVideoFrame: Sendable, Equatable {
    /// The VP8 bitstream of one frame.
    public var data: [UInt8]
    /// Whether the frame is a key frame (decodable alone).
    public var isKeyFrame: Bool
    /// The RTP timestamp (90 kHz clock), counted from the encoder's first frame.
    public var rtpTimestamp: UInt32
    /// The capture time of the picture it was made from, on the host's clock.
    public var captureTime: Instant
    /// The picture width in pixels.
    public var width: Int
    /// The picture height in pixels.
    public var height: Int

    /// A frame as the encoder produces it.
    public init(data: [UInt8], isKeyFrame: Bool, rtpTimestamp: UInt32, captureTime: Instant, width: Int, height: Int) {
        self.data = data
        self.isKeyFrame = isKeyFrame
        self.rtpTimestamp = rtpTimestamp
        self.captureTime = captureTime
        self.width = width
        self.height = height
    }
}

/// A libvpx VP8 encoder set up for real-time conferencing: one-pass CBR, no lag, error-resilient
/// (a lost frame does not break the entropy contexts of later ones), real-time deadline.
///
/// Not `Sendable`: one room's thread owns each encoder. A picture whose size differs from the
/// configured one re-initializes the encoder at the new size (libvpx cannot grow a running VP8
/// encoder), so the next output is a key frame at that size; ``configuration`` follows.
public final class VP8Encoder {
    /// What the encoder makes.
    public struct Configuration: Sendable, Equatable {
        /// Picture width in pixels (2...16384).
        public var width: Int
        /// Picture height in pixels (2...16384).
        public var height: Int
        /// Frames per second the caller feeds (1...120): sets the frame duration for rate control.
        public var framesPerSecond: Int
        /// Target bit rate, bits per second (CBR).
        public var bitrate: Int
        /// Encoder threads (1 by default: one thread per stream and streams in parallel is cheaper).
        public var threads: Int
        /// libvpx speed, -16...16 (negative: a fixed speed; -16 fastest). -6 measured best here
        /// (`tessera bench vp8-cpu-used`, release, 1 thread, CBR, a panning texture, 3 runs on a
        /// shared 2-core machine): at 640x360 600 kbit/s it costs what -8 costs (1.7–1.8 ms a
        /// frame), at 1280x720 1.5 Mbit/s 0–15% more (median 6.1 ms against 5.9 ms), for 2.2–2.4
        /// dB more luma PSNR at the same size. -4 costs twice as much for 0.6 dB more; -10 saves
        /// 10–15% for 0.3 dB less than -8; -12 and -16 lose 3–5 dB and overshoot the CBR target.
        public var cpuUsed: Int
        /// At most this many frames between key frames (more come on request).
        public var keyFrameInterval: Int
        /// libvpx's static threshold: a macroblock whose change from the last picture is under it
        /// is coded as skipped without a search (1: every change counts, WebRTC's value for cameras).
        public var staticThreshold: Int
        /// The VP8 version (RFC 6386 §9.1, the key frame header's 3 bits): 0 the normal loop filter
        /// and six-tap prediction; 1 to 3 trade quality for cheaper coding (a simple loop filter,
        /// bilinear prediction, and at 3 full-pixel chroma vectors). Every decoder takes all four.
        public var profile: Int
        /// Codes as skipped, without a search, each macroblock that the last picture's
        /// reconstruction already shows within one level in every sample (``SettledBlocks``),
        /// and leaves it out of the loop filter (a segment of its own at filter level 0).
        /// For composites, whose flat areas (the background, bars, placeholders, flat tiles)
        /// libvpx otherwise searches again in every picture; a camera's noise would leave nothing
        /// to skip, so cameras (and `tessera load`'s, which stand for them) leave it off.
        public var skipsSettledBlocks: Bool

        /// A configuration; the defaults are the host's compositor output.
        public init(width: Int, height: Int, framesPerSecond: Int = 30, bitrate: Int = 1_500_000, threads: Int = 1,
                    cpuUsed: Int = -6, keyFrameInterval: Int = 3000, staticThreshold: Int = 1, profile: Int = 0,
                    skipsSettledBlocks: Bool = false) {
            self.width = width
            self.height = height
            self.framesPerSecond = framesPerSecond
            self.bitrate = bitrate
            self.threads = threads
            self.cpuUsed = cpuUsed
            self.keyFrameInterval = keyFrameInterval
            self.staticThreshold = staticThreshold
            self.profile = profile
            self.skipsSettledBlocks = skipsSettledBlocks
        }

        func validate() throws(VP8CodecError) {
            guard (2...16384).contains(width), (2...16384).contains(height) else {
                throw .invalidConfiguration("size \(width)x\(height) is outside 2...16384")
            }
            guard (1...120).contains(framesPerSecond) else { throw .invalidConfiguration("\(framesPerSecond) fps is outside 1...120") }
            guard (10_000...100_000_000).contains(bitrate) else {
                throw .invalidConfiguration("bit rate \(bitrate) bit/s is outside 10 kbit/s...100 Mbit/s")
            }
            guard (1...16).contains(threads) else { throw .invalidConfiguration("\(threads) threads is outside 1...16") }
            guard (-16...16).contains(cpuUsed) else { throw .invalidConfiguration("cpu-used \(cpuUsed) is outside -16...16") }
            guard (0...100_000).contains(staticThreshold) else { throw .invalidConfiguration("static threshold \(staticThreshold) is outside 0...100000") }
            guard (0...3).contains(profile) else { throw .invalidConfiguration("profile \(profile) is outside 0...3") }
            guard keyFrameInterval >= 1 else { throw .invalidConfiguration("key frame interval \(keyFrameInterval) is below 1") }
        }
    }

    /// The RTP clock of VP8 (RFC 7741 §4.1).
    public static let rtpClockRate = 90_000

    /// The settings in force (the size follows the pictures).
    public private(set) var configuration: Configuration

    private let context: UnsafeMutablePointer<vpx_codec_ctx_t>
    private var settings = vpx_codec_enc_cfg_t()
    private var isOpen = false
    private var keyFrameRequested = false
    /// The last presentation time given to libvpx, on the 90 kHz clock.
    private var lastPTS: Int64?
    private var firstCapture: Instant?
    /// Pictures encoded since the encoder (re)started: the first has no reconstruction to compare.
    private var framesSinceOpen = 0
    private var settled = SettledBlocks()
    /// Whether libvpx holds an active map now (one is set only while some block is settled).
    private var activeMapSet = false
    /// Macroblocks coded as skipped in the last picture because they were settled
    /// (`Configuration.skipsSettledBlocks`).
    public private(set) var settledBlocks = 0
    /// Macroblocks (16x16) in a picture of the configured size.
    public var macroblocks: Int { ((configuration.width + 15) / 16) * ((configuration.height + 15) / 16) }

    /// Starts an encoder.
    public init(_ configuration: Configuration) throws(VP8CodecError) {
        try configuration.validate()
        self.configuration = configuration
        context = .allocate(capacity: 1)
        context.initialize(to: vpx_codec_ctx_t())
        // Fully initialized here: if opening fails, deinit frees the context.
        try open()
    }

    deinit {
        if isOpen { vpx_codec_destroy(context) }
        context.deallocate()
    }

    private func open() throws(VP8CodecError) {
        var config = vpx_codec_enc_cfg_t()
        let status = vpx_codec_enc_config_default(vpx_codec_vp8_cx(), &config, 0)
        guard status == VPX_CODEC_OK else { throw .initializationFailed(vpxErrorText(nil, status)) }
        config.g_w = UInt32(configuration.width)
        config.g_h = UInt32(configuration.height)
        config.g_timebase = vpx_rational(num: 1, den: Int32(Self.rtpClockRate))
        config.g_threads = UInt32(configuration.threads)
        config.g_profile = UInt32(configuration.profile)
        config.g_error_resilient = vpx_codec_er_flags_t(tessera_vpx_error_resilient_default)
        config.g_lag_in_frames = 0
        config.g_pass = VPX_RC_ONE_PASS
        config.rc_end_usage = VPX_CBR
        config.rc_target_bitrate = UInt32(configuration.bitrate / 1000)
        // WebRTC's real-time values: quantizers 2...56, a 1 s buffer starting half full.
        config.rc_min_quantizer = 2
        config.rc_max_quantizer = 56
        config.rc_undershoot_pct = 100
        config.rc_overshoot_pct = 15
        config.rc_buf_initial_sz = 500
        config.rc_buf_optimal_sz = 600
        config.rc_buf_sz = 1000
        config.rc_dropframe_thresh = 0  // every picture is sent; the compositor sets the pace
        config.rc_resize_allowed = 0
        config.kf_mode = VPX_KF_AUTO
        config.kf_min_dist = 0
        config.kf_max_dist = UInt32(configuration.keyFrameInterval)
        settings = config

        let initStatus = tessera_vpx_enc_init_vp8(context, &config, 0)
        guard initStatus == VPX_CODEC_OK else { throw .initializationFailed(vpxErrorText(context, initStatus)) }
        isOpen = true
        // Controls are ints; libvpx has no per-control type checks through vpx_codec_control_.
        let controls: [(Int32, Int32, String)] = [
            (Int32(VP8E_SET_CPUUSED.rawValue), Int32(configuration.cpuUsed), "cpu-used"),
            (Int32(VP8E_SET_NOISE_SENSITIVITY.rawValue), 0, "noise sensitivity"),
            (Int32(VP8E_SET_STATIC_THRESHOLD.rawValue), Int32(configuration.staticThreshold), "static threshold"),
            (Int32(VP8E_SET_TOKEN_PARTITIONS.rawValue), Int32(VP8_ONE_TOKENPARTITION.rawValue), "token partitions"),
            // A key frame may use this share of the per-frame budget (WebRTC: buffer 0.5 s × fps / 2).
            (Int32(VP8E_SET_MAX_INTRA_BITRATE_PCT.rawValue), Int32(max(300, configuration.framesPerSecond * 25)), "max intra bit rate"),
        ]
        for (id, value, name) in controls {
            let controlStatus = tessera_vpx_control_int(context, id, value)
            guard controlStatus == VPX_CODEC_OK else {
                // The error text lives in the context: read it before the context is destroyed.
                let reason = "\(name) = \(value): \(vpxErrorText(context, controlStatus))"
                vpx_codec_destroy(context)
                isOpen = false
                throw .initializationFailed(reason)
            }
        }
    }

    /// Makes the next encoded frame a key frame (after a PLI or FIR, or a new receiver).
    public func requestKeyFrame() {
        keyFrameRequested = true
    }

    /// Changes the target bit rate from the next frame on (bits per second).
    public func setBitrate(_ bitrate: Int) throws(VP8CodecError) {
        guard (10_000...100_000_000).contains(bitrate) else {
            throw .invalidConfiguration("bit rate \(bitrate) bit/s is outside 10 kbit/s...100 Mbit/s")
        }
        var config = settings
        config.rc_target_bitrate = UInt32(bitrate / 1000)
        let status = vpx_codec_enc_config_set(context, &config)
        guard status == VPX_CODEC_OK else { throw .reconfigurationFailed(vpxErrorText(context, status)) }
        settings = config
        configuration.bitrate = bitrate
    }

    /// Changes libvpx's speed (cpu-used, -16...16) from the next frame on.
    public func setCPUUsed(_ cpuUsed: Int) throws(VP8CodecError) {
        guard (-16...16).contains(cpuUsed) else { throw .invalidConfiguration("cpu-used \(cpuUsed) is outside -16...16") }
        guard cpuUsed != configuration.cpuUsed else { return }
        if isOpen {
            let status = tessera_vpx_control_int(context, Int32(VP8E_SET_CPUUSED.rawValue), Int32(cpuUsed))
            guard status == VPX_CODEC_OK else { throw .reconfigurationFailed(vpxErrorText(context, status)) }
        }
        configuration.cpuUsed = cpuUsed
    }

    /// Codes the VP8 version `profile` (0...3, `Configuration.profile`) from the next picture on:
    /// the encoder restarts, so that picture is a key frame (which carries the version).
    public func setProfile(_ profile: Int) throws(VP8CodecError) {
        guard profile != configuration.profile else { return }
        var next = configuration
        next.profile = profile
        try reopen(with: next)
    }

    /// Changes libvpx's static threshold (`Configuration.staticThreshold`) from the next frame on.
    public func setStaticThreshold(_ threshold: Int) throws(VP8CodecError) {
        guard (0...100_000).contains(threshold) else { throw .invalidConfiguration("static threshold \(threshold) is outside 0...100000") }
        guard threshold != configuration.staticThreshold else { return }
        if isOpen {
            let status = tessera_vpx_control_int(context, Int32(VP8E_SET_STATIC_THRESHOLD.rawValue), Int32(threshold))
            guard status == VPX_CODEC_OK else { throw .reconfigurationFailed(vpxErrorText(context, status)) }
        }
        configuration.staticThreshold = threshold
    }

    /// Encodes one picture. Usually one frame comes out; none if libvpx holds it back.
    /// A picture of another size restarts the encoder at that size (the output is a key frame);
    /// if that restart failed, the next picture tries again.
    public func encode(_ frame: I420Frame) throws(VP8CodecError) -> [EncodedVideoFrame] {
        if !isOpen || frame.width != configuration.width || frame.height != configuration.height {
            try resize(width: frame.width, height: frame.height)
        }
        let pts = presentationTime(for: frame.timestamp)
        let duration = UInt(Self.rtpClockRate / configuration.framesPerSecond)
        var flags: vpx_enc_frame_flags_t = 0
        if keyFrameRequested { flags |= tessera_vpx_eflag_force_kf }

        let (width, height, chromaWidth) = (frame.width, frame.height, frame.chromaWidth)
        let context = context
        let status: vpx_codec_err_t = frame.withPlanes { y, u, v in
            var image = vpx_image_t()
            // vpx_img_wrap fills in the format fields; the planes are set by hand because it
            // would round the chroma stride down for odd widths.
            guard vpx_img_wrap(&image, VPX_IMG_FMT_I420, UInt32(width), UInt32(height), 1, UnsafeMutablePointer(mutating: y)) != nil else {
                return VPX_CODEC_INVALID_PARAM
            }
            image.planes.0 = UnsafeMutablePointer(mutating: y)
            image.planes.1 = UnsafeMutablePointer(mutating: u)
            image.planes.2 = UnsafeMutablePointer(mutating: v)
            image.stride.0 = Int32(width)
            image.stride.1 = Int32(chromaWidth)
            image.stride.2 = Int32(chromaWidth)
            markSettledBlocks(source: (y, u, v), chromaWidth: chromaWidth, keyFrame: flags & tessera_vpx_eflag_force_kf != 0)
            return vpx_codec_encode(context, &image, pts, duration, flags, tessera_vpx_deadline_realtime)
        }
        guard status == VPX_CODEC_OK else { throw .encodeFailed(vpxErrorText(context, status)) }
        keyFrameRequested = false
        framesSinceOpen += 1

        var output: [EncodedVideoFrame] = []
        var iterator: vpx_codec_iter_t?
        while let packet = vpx_codec_get_cx_data(context, &iterator) {
            guard packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
            let encoded = packet.pointee.data.frame
            guard let buffer = encoded.buf, encoded.sz > 0 else { continue }
            let bytes = [UInt8](UnsafeRawBufferPointer(start: buffer, count: encoded.sz))
            output.append(EncodedVideoFrame(data: bytes, isKeyFrame: encoded.flags & tessera_vpx_frame_is_key != 0,
                                            rtpTimestamp: UInt32(truncatingIfNeeded: encoded.pts), captureTime: frame.timestamp,
                                            width: width, height: height))
        }
        return output
    }

    /// Compares the picture about to be coded (`source` planes, packed) with the reconstruction of
    /// the last one and hands libvpx the map of the blocks to code; takes the map away when no
    /// block is settled (or on a key frame, which codes every block anyway).
    private func markSettledBlocks(source: (UnsafePointer<UInt8>, UnsafePointer<UInt8>, UnsafePointer<UInt8>), chromaWidth: Int,
                                   keyFrame: Bool) {
        let (width, height) = (configuration.width, configuration.height)
        var count = 0
        if configuration.skipsSettledBlocks, !keyFrame, framesSinceOpen > 0, let preview = vpx_codec_get_preview_frame(context),
           preview.pointee.d_w == UInt32(width), preview.pointee.d_h == UInt32(height),
           let ry = preview.pointee.planes.0, let ru = preview.pointee.planes.1, let rv = preview.pointee.planes.2 {
            let strides = preview.pointee.stride
            count = settled.update(
                width: width, height: height,
                source: (.init(base: source.0, stride: width), .init(base: source.1, stride: chromaWidth),
                         .init(base: source.2, stride: chromaWidth)),
                reconstruction: (.init(base: ry, stride: Int(strides.0)), .init(base: ru, stride: Int(strides.1)),
                                 .init(base: rv, stride: Int(strides.2))))
        }
        settledBlocks = count
        guard count > 0 || activeMapSet else { return }
        // No map (a null one) has libvpx code every block again, and filter each.
        let (rows, columns) = (UInt32(settled.rows), UInt32(settled.columns))
        var activeMap = vpx_active_map_t(active_map: nil, rows: rows, cols: columns)
        let status = settled.withActiveMap { map in
            activeMap.active_map = count > 0 ? map : nil
            let skipping = tessera_vpx_set_active_map(context, &activeMap)
            // The same map as segments: a settled block is left unfiltered, so its reconstruction
            // stays what was compared. Only where it is also skipped: a block coded afresh without
            // the filter would show its block edges. A refused segment map only costs the filter.
            _ = tessera_vpx_set_unfiltered_blocks(context, skipping == VPX_CODEC_OK ? activeMap.active_map : nil, rows, columns)
            return skipping
        }
        // A refused map leaves libvpx coding every block, which is only slower.
        activeMapSet = count > 0 && status == VPX_CODEC_OK
        if status != VPX_CODEC_OK { settledBlocks = 0 }
    }

    /// The 90 kHz time of a picture: its capture time since the first picture when that moves
    /// forward, otherwise one frame duration after the last (pictures without timestamps).
    private func presentationTime(for capture: Instant) -> Int64 {
        let step = Int64(Self.rtpClockRate / configuration.framesPerSecond)
        let first = firstCapture ?? capture
        if firstCapture == nil { firstCapture = capture }
        let sinceFirst = (capture - first).nanosecondsClamped / 1_000_000_000 * Int64(Self.rtpClockRate)
            + (capture - first).nanosecondsClamped % 1_000_000_000 * Int64(Self.rtpClockRate) / 1_000_000_000
        let pts: Int64
        if let last = lastPTS { pts = sinceFirst > last ? sinceFirst : last + step } else { pts = 0 }
        lastPTS = pts
        return pts
    }

    private func resize(width: Int, height: Int) throws(VP8CodecError) {
        var next = configuration
        next.width = width
        next.height = height
        try reopen(with: next)
    }

    /// Restarts the encoder at `next` (its first frame is then a key frame).
    private func reopen(with next: Configuration) throws(VP8CodecError) {
        try next.validate()
        if isOpen {
            vpx_codec_destroy(context)
            isOpen = false
        }
        configuration = next
        framesSinceOpen = 0
        activeMapSet = false
        context.initialize(to: vpx_codec_ctx_t())
        try open()
    }
}
