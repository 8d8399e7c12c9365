private import CVPX
private import COpus
private import CYUV
private import CPNG
private import CFreeType

/// The C libraries the media layer links, with the versions found at run time.
public enum MediaLibraries {
    public static var versions: [(name: String, version: String)] {
        [
            ("libvpx", String(cString: vpx_codec_version_str())),
            ("libopus", String(cString: opus_get_version_string())),
            ("libyuv", String(tessera_libyuv_version())),
            ("libpng", String(cString: png_get_libpng_ver(nil))),
            ("FreeType", freeTypeVersion()),
        ]
    }

    private static func freeTypeVersion() -> String {
        var library: FT_Library?
        guard FT_Init_FreeType(&library) == 0, let library else { return "unavailable" }
        defer { FT_Done_FreeType(library) }
        var major: FT_Int = 0, minor: FT_Int = 0, patch: FT_Int = 0
        FT_Library_Version(library, &major, &minor, &patch)
        return "\(major).\(minor).\(patch)"
    }
}
