private import COpenSSL
private import CSRTP
private import CZlib

/// The C libraries the transport layer links, with the versions found at run time.
public enum TransportLibraries {
    public static var versions: [(name: String, version: String)] {
        [
            ("OpenSSL", String(cString: OpenSSL_version(Int32(OPENSSL_VERSION)))),
            ("libsrtp2", String(cString: srtp_get_version_string())),
            ("SRTP crypto", SRTPSession.crypto.summary),
            ("zlib", String(cString: zlibVersion())),
        ]
    }
}
