// libwebm's WebM parser (webm_parser, C++) behind a C interface Swift can call: the WebM and
// Matroska demuxing of MediaFileReader. Frames come one at a time, in file order.
#ifndef TESSERA_CWEBM_H
#define TESSERA_CWEBM_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tessera_webm_reader tessera_webm_reader;

/// A TrackEntry as the file declares it.
typedef struct {
    uint64_t number;
    /// Matroska TrackType: 1 video, 2 audio.
    uint64_t type;
    /// The CodecID ("V_VP8", "A_OPUS", …), cut to 47 bytes.
    char codec_id[48];
    uint64_t pixel_width;
    uint64_t pixel_height;
    uint64_t channels;
    /// CodecDelay in nanoseconds (0 when absent).
    uint64_t codec_delay_ns;
} tessera_webm_track;

/// One frame of a Block or SimpleBlock.
typedef struct {
    uint64_t track;
    /// (Cluster timecode + the block's) x TimecodeScale, in nanoseconds: CodecDelay not taken off.
    int64_t time_ns;
    /// A SimpleBlock's key flag, or a Block in a BlockGroup without a ReferenceBlock.
    int is_key;
    /// 0 for a block's first frame; later frames of a laced block count up.
    int index_in_block;
    /// Valid until the next call on the reader.
    const uint8_t *data;
    size_t size;
} tessera_webm_frame;

/// Status codes beside libwebm's (`webm::Status`, negative) and errno values (positive).
enum {
    TESSERA_WEBM_FRAME_TOO_LARGE = -2000000,
    TESSERA_WEBM_OUT_OF_MEMORY = -2000001,
};

/// Opens `path` and reads up to the first Cluster (the EBML header, Info and Tracks). NULL on
/// failure with `*status` an errno (> 0) or a libwebm status (< 0). `doc_type` receives the
/// EBML DocType ("webm", "matroska"), cut to 15 bytes.
tessera_webm_reader *tessera_webm_open(const char *path, int *status, char doc_type[16]);
size_t tessera_webm_track_count(const tessera_webm_reader *reader);
/// The track at `index` (0-based, file order) into `track`; 0 when out of range.
int tessera_webm_track_at(const tessera_webm_reader *reader, size_t index, tessera_webm_track *track);
/// Only frames of these two track numbers are read (0: none); the others are skipped.
void tessera_webm_select(tessera_webm_reader *reader, uint64_t video_track, uint64_t audio_track);
/// The next frame: 1 with `frame` filled, 0 at the end (or where a cut-short file ends), or a
/// status < 0 when the file is malformed.
int tessera_webm_next(tessera_webm_reader *reader, tessera_webm_frame *frame);
/// The first damage read past so far: its status (0: none), the byte where it was met and the
/// byte of the Cluster reading went on from.
int tessera_webm_damage(const tessera_webm_reader *reader, uint64_t *position, uint64_t *resumed_at);
/// A name for a status tessera_webm_open or tessera_webm_next returned.
const char *tessera_webm_status_name(int status);
void tessera_webm_close(tessera_webm_reader *reader);

#ifdef __cplusplus
}
#endif
#endif
