import RTP
import Wire
import WireTesting
