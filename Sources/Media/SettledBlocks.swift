private import CPictureDifference

/// Which 16x16 macroblocks of the next picture the encoder's last reconstruction already shows
/// as they are, for libvpx's *active map* (`VP8E_SET_ACTIVEMAP`): an inactive block is coded as
/// skipped (the last picture's block again, no residual) without a mode search.
///
/// A block is settled when every sample of it, in each plane, is within ``tolerance`` of the
/// reconstruction's. Comparing with the *reconstruction*, not with the previous picture, is what
/// keeps the quality: a still block that was coded coarsely (after a key frame, or while the rate
/// was low) stays active and goes on being refined until it is shown that well, and only then is
/// skipped. (Skipping blocks whose picture had not changed froze a still texture at its first
/// coarse coding: 34 dB where coding every block reached 47.) What it saves is the blocks libvpx
/// would search again in every picture without ever coding their last level away: flat areas and
/// edges off by one (a composite's background, bars, placeholders, flat tiles); a block shown
/// exactly libvpx skips cheaply by itself. A camera's noise keeps its tile active, and after a
/// picture in which almost nothing settled (cameras fill the canvas) the next few are not compared.
///
/// The same map goes to libvpx as segments (`VP8E_SET_ROI_MAP`, RFC 6386 §9.3): the settled
/// blocks are segment 0, whose loop filter level is brought down to 0, so they are not filtered
/// again in every picture (VP8 filters the edges of every block, skipped or not: on a still
/// composite that was the encoder's largest cost) and their reconstruction stays what was
/// compared. Handing libvpx segments ends its cyclic refresh for that encoder (its own use of
/// segments in CBR, which re-codes a few still blocks of each picture more finely).
struct SettledBlocks {
    /// The largest difference of any sample from the reconstruction's in a settled block.
    static let tolerance: UInt8 = 1
    /// Pictures not compared after one in which fewer than 1 block in 50 settled.
    static let quietPictures = 7

    /// libvpx's map, one byte per macroblock in rows: 1 to code, 0 settled (also the segment map).
    private(set) var activeMap: [UInt8] = []
    private(set) var rows = 0
    private(set) var columns = 0
    private var picturesToSkip = 0

    /// One plane of 8-bit samples.
    struct Plane {
        var base: UnsafePointer<UInt8>
        var stride: Int
    }

    /// Compares a `width` x `height` picture's planes (`source`: Y, U, V) with the last
    /// reconstruction's and fills ``activeMap``. Returns the number of settled blocks (0, and the
    /// map left as it was, for a picture not compared).
    mutating func update(width: Int, height: Int, source: (Plane, Plane, Plane), reconstruction: (Plane, Plane, Plane)) -> Int {
        let columns = (width + 15) / 16, rows = (height + 15) / 16
        if columns != self.columns || rows != self.rows {
            (self.columns, self.rows) = (columns, rows)
            activeMap = Array(repeating: 1, count: columns * rows)
            picturesToSkip = 0
        }
        guard picturesToSkip == 0 else {
            picturesToSkip -= 1
            return 0
        }
        let chroma = (width: I420Frame.chromaSide(width), height: I420Frame.chromaSide(height))
        let settled = activeMap.withUnsafeMutableBufferPointer { map in
            guard let entries = map.baseAddress else { return 0 }
            // Marked settled (1) first, each plane clearing the blocks it finds out of tolerance.
            entries.update(repeating: 1, count: map.count)
            func compare(_ picture: Plane, _ shown: Plane, width: Int, height: Int, side: Int32) {
                tessera_blocks_within(picture.base, picture.stride, shown.base, shown.stride, Int32(width), Int32(height), side,
                                      Int32(columns), Self.tolerance, entries)
            }
            compare(source.0, reconstruction.0, width: width, height: height, side: 16)
            compare(source.1, reconstruction.1, width: chroma.width, height: chroma.height, side: 8)
            compare(source.2, reconstruction.2, width: chroma.width, height: chroma.height, side: 8)
            var settled = 0
            for index in map.indices {
                settled &+= Int(map[index])
                map[index] ^= 1  // libvpx's sense: 1 codes the block
            }
            return settled
        }
        if settled < max(1, activeMap.count / 50) { picturesToSkip = Self.quietPictures }
        return settled
    }

    /// Lends libvpx the map (it copies it during the call); nil before the first ``update``.
    mutating func withActiveMap<Result>(_ body: (UnsafeMutablePointer<UInt8>?) -> Result) -> Result {
        activeMap.withUnsafeMutableBufferPointer { body($0.baseAddress) }
    }
}
