// libwebm's webm_parser drives a Callback as it reads; this shim turns those callbacks into a
// pull interface (one frame per call) by pausing the parser with kOkPartial after each block.
#include "CWebM.h"

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <sys/types.h>
#include <string>
#include <deque>
#include <new>
#include <vector>

#include <webm/callback.h>
#include <webm/file_reader.h>
#include <webm/status.h>
#include <webm/webm_parser.h>

namespace {

/// A frame larger than this is refused as corrupt: a hostile size field must not allocate
/// gigabytes (a 4K VP8 key frame is a few megabytes).
constexpr std::uint64_t kLargestFrame = 64u << 20;

/// A FILE read through libwebm's Reader interface, which can also seek: after a damaged
/// element, reading goes on from the next Cluster (what a player does).
class SeekableFileReader : public webm::Reader {
public:
    explicit SeekableFileReader(FILE *file) : file_(file) {}
    ~SeekableFileReader() override { std::fclose(file_); }
    SeekableFileReader(const SeekableFileReader &) = delete;
    SeekableFileReader &operator=(const SeekableFileReader &) = delete;

    webm::Status Read(std::size_t count, std::uint8_t *buffer, std::uint64_t *read) override {
        *read = std::fread(buffer, 1, count, file_);
        position_ += *read;
        if (*read == count) return webm::Status(webm::Status::kOkCompleted);
        return webm::Status(*read > 0 ? webm::Status::kOkPartial : webm::Status::kEndOfFile);
    }

    webm::Status Skip(std::uint64_t count, std::uint64_t *skipped) override {
        std::uint8_t chunk[16384];
        *skipped = 0;
        while (*skipped < count) {
            const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(count - *skipped, sizeof chunk));
            const std::size_t got = std::fread(chunk, 1, want, file_);
            *skipped += got;
            position_ += got;
            if (got < want) break;
        }
        if (*skipped == count) return webm::Status(webm::Status::kOkCompleted);
        return webm::Status(*skipped > 0 ? webm::Status::kOkPartial : webm::Status::kEndOfFile);
    }

    std::uint64_t Position() const override { return position_; }

    /// Moves to the next Cluster ID (1F 43 B6 75) at or after the present position; false at
    /// the end of the file.
    bool SeekToNextCluster() {
        static const std::uint8_t id[4] = {0x1F, 0x43, 0xB6, 0x75};
        // Past the last Cluster found, so a false one (those bytes inside a frame) is not
        // found again and again.
        if (found_ != UINT64_MAX && position_ <= found_) {
            position_ = found_ + 1;
            if (fseeko(file_, static_cast<off_t>(position_), SEEK_SET) != 0) return false;
        }
        std::size_t matched = 0;
        int byte;
        while ((byte = std::fgetc(file_)) != EOF) {
            position_ += 1;
            if (static_cast<std::uint8_t>(byte) == id[matched]) {
                if (++matched == sizeof id) {
                    position_ -= sizeof id;
                    found_ = position_;
                    return fseeko(file_, static_cast<off_t>(position_), SEEK_SET) == 0;
                }
            } else {
                matched = static_cast<std::uint8_t>(byte) == id[0] ? 1 : 0;
            }
        }
        return false;
    }

private:
    FILE *file_;
    std::uint64_t position_ = 0;
    std::uint64_t found_ = UINT64_MAX;
};

struct Frame {
    std::uint64_t track;
    std::int64_t time_ns;
    bool is_key;
    int index_in_block;
    std::vector<std::uint8_t> data;
};

class FrameCollector : public webm::Callback {
public:
    std::vector<tessera_webm_track> tracks;
    std::string doc_type = "matroska";
    std::uint64_t timecode_scale = 1000000;
    std::uint64_t video_track = 0, audio_track = 0;
    /// Set once the first Cluster begins: the header is read.
    bool reached_cluster = false;
    std::deque<Frame> ready;

    webm::Status OnEbml(const webm::ElementMetadata &, const webm::Ebml &ebml) override {
        doc_type = ebml.doc_type.value();
        return webm::Status(webm::Status::kOkCompleted);
    }

    webm::Status OnInfo(const webm::ElementMetadata &, const webm::Info &info) override {
        // A scale of 0 would put every frame at 0; treat it as the default.
        timecode_scale = info.timecode_scale.value() > 0 ? info.timecode_scale.value() : 1000000;
        return webm::Status(webm::Status::kOkCompleted);
    }

    webm::Status OnTrackEntry(const webm::ElementMetadata &, const webm::TrackEntry &entry) override {
        tessera_webm_track track = {};
        track.number = entry.track_number.value();
        track.type = static_cast<std::uint64_t>(entry.track_type.value());
        std::snprintf(track.codec_id, sizeof track.codec_id, "%s", entry.codec_id.value().c_str());
        track.pixel_width = entry.video.value().pixel_width.value();
        track.pixel_height = entry.video.value().pixel_height.value();
        track.channels = entry.audio.value().channels.value();
        track.codec_delay_ns = entry.codec_delay.value();
        tracks.push_back(track);
        return webm::Status(webm::Status::kOkCompleted);
    }

    webm::Status OnClusterBegin(const webm::ElementMetadata &, const webm::Cluster &cluster,
                                webm::Action *action) override {
        *action = webm::Action::kRead;
        cluster_timecode = cluster.timecode.value();
        if (!reached_cluster) {
            // Pause here once, so opening stops with the tracks known; on resume the parser
            // calls this again.
            reached_cluster = true;
            return webm::Status(webm::Status::kOkPartial);
        }
        return webm::Status(webm::Status::kOkCompleted);
    }

    webm::Status OnSimpleBlockBegin(const webm::ElementMetadata &, const webm::SimpleBlock &block,
                                    webm::Action *action) override {
        *action = begin(block) ? webm::Action::kRead : webm::Action::kSkip;
        return webm::Status(webm::Status::kOkCompleted);
    }

    webm::Status OnSimpleBlockEnd(const webm::ElementMetadata &, const webm::SimpleBlock &block) override {
        return end(block.is_key_frame);
    }

    webm::Status OnBlockBegin(const webm::ElementMetadata &, const webm::Block &block,
                              webm::Action *action) override {
        // A Block's key-ness is known at its group's end (no ReferenceBlock).
        *action = begin(block) ? webm::Action::kRead : webm::Action::kSkip;
        return webm::Status(webm::Status::kOkCompleted);
    }

    webm::Status OnBlockGroupEnd(const webm::ElementMetadata &, const webm::BlockGroup &group) override {
        return end(group.references.empty());
    }

    webm::Status OnFrame(const webm::FrameMetadata &metadata, webm::Reader *reader,
                         std::uint64_t *bytes_remaining) override {
        if (!in_block) return Skip(reader, bytes_remaining);
        if (!frame_in_progress) {
            // A resumed call (after a short read) continues the frame it began.
            if (metadata.size > kLargestFrame) return webm::Status(TESSERA_WEBM_FRAME_TOO_LARGE);
            Frame frame{block_track, block_time_ns, false, static_cast<int>(building.size()), {}};
            frame.data.reserve(static_cast<std::size_t>(metadata.size));
            building.push_back(std::move(frame));
            frame_in_progress = true;
        }
        Frame &frame = building.back();
        while (*bytes_remaining > 0) {
            // Straight into the frame, a chunk at a time (the size is the file's word, not yet
            // the bytes'): a frame claimed larger than the file ends with the file.
            const std::size_t have = frame.data.size();
            const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(*bytes_remaining, 1u << 20));
            frame.data.resize(have + want);
            std::uint64_t read = 0;
            webm::Status status = reader->Read(want, frame.data.data() + have, &read);
            frame.data.resize(have + static_cast<std::size_t>(read));
            *bytes_remaining -= read;
            if (read == 0) return status;  // the end of the file inside a frame
        }
        frame_in_progress = false;
        return webm::Status(webm::Status::kOkCompleted);
    }

private:
    std::uint64_t cluster_timecode = 0;
    bool in_block = false;
    std::uint64_t block_track = 0;
    std::int64_t block_time_ns = 0;
    bool frame_in_progress = false;
    std::vector<Frame> building;
    /// Set when end() has paused the parser, so the repeated call after resuming goes on.
    bool paused_at_end = false;

public:
    /// Forgets a block cut off by damage (reading goes on from the next Cluster).
    void drop_block() {
        building.clear();
        in_block = false;
        frame_in_progress = false;
        paused_at_end = false;
    }

private:
    bool begin(const webm::Block &block) {
        building.clear();
        frame_in_progress = false;
        in_block = block.track_number != 0 && (block.track_number == video_track || block.track_number == audio_track);
        block_track = block.track_number;
        // Unsigned arithmetic wraps on hostile values instead of being undefined.
        const std::uint64_t ticks = cluster_timecode + static_cast<std::uint64_t>(static_cast<std::int64_t>(block.timecode));
        block_time_ns = static_cast<std::int64_t>(ticks * timecode_scale);
        return in_block;
    }

    webm::Status end(bool is_key) {
        if (paused_at_end) {
            paused_at_end = false;
            return webm::Status(webm::Status::kOkCompleted);
        }
        if (!in_block) return webm::Status(webm::Status::kOkCompleted);
        in_block = false;
        for (Frame &frame : building) {
            frame.is_key = is_key;
            ready.push_back(std::move(frame));
        }
        building.clear();
        if (ready.empty()) return webm::Status(webm::Status::kOkCompleted);
        paused_at_end = true;
        return webm::Status(webm::Status::kOkPartial);
    }
};

}  // namespace

struct tessera_webm_reader {
    explicit tessera_webm_reader(FILE *file) : file(file) {}
    SeekableFileReader file;
    webm::WebmParser parser;
    FrameCollector collector;
    Frame current;
    /// The parser's last status once it stopped for good (completed, end of file or an error).
    bool finished = false;
    int final_status = 0;
    /// The first damage read past: its status and where reading went on from (0: none).
    int damage_status = 0;
    std::uint64_t damage_position = 0;
    std::uint64_t resumed_at = 0;
};

namespace {
/// Damage to skip past: a parsing error, not the end of the data or a pause.
bool is_damage(const webm::Status &status) {
    return status.is_parsing_error() || status.code == TESSERA_WEBM_FRAME_TOO_LARGE;
}
}  // namespace

extern "C" {

tessera_webm_reader *tessera_webm_open(const char *path, int *status, char doc_type[16]) {
    *status = 0;
    FILE *file = std::fopen(path, "rb");
    if (file == nullptr) {
        *status = errno != 0 ? errno : ENOENT;
        return nullptr;
    }
    tessera_webm_reader *reader = new (std::nothrow) tessera_webm_reader(file);
    if (reader == nullptr) {
        std::fclose(file);
        *status = ENOMEM;
        return nullptr;
    }
    try {
        webm::Status parsed = reader->parser.Feed(&reader->collector, &reader->file);
        // Opening stops at the first Cluster (kOkPartial), or the file ends without one.
        const bool header_read = reader->collector.reached_cluster ||
            parsed.completed_ok() || (parsed.code == webm::Status::kEndOfFile && !reader->collector.tracks.empty());
        if (!header_read) {
            *status = parsed.code == webm::Status::kOkPartial || parsed.code == webm::Status::kOkCompleted
                ? webm::Status::kEndOfFile : parsed.code;
            delete reader;
            return nullptr;
        }
        if (!reader->collector.reached_cluster) {
            reader->finished = true;
            reader->final_status = 0;
        }
    } catch (const std::bad_alloc &) {
        delete reader;
        *status = TESSERA_WEBM_OUT_OF_MEMORY;
        return nullptr;
    }
    std::snprintf(doc_type, 16, "%s", reader->collector.doc_type.c_str());
    return reader;
}

size_t tessera_webm_track_count(const tessera_webm_reader *reader) { return reader->collector.tracks.size(); }

int tessera_webm_track_at(const tessera_webm_reader *reader, size_t index, tessera_webm_track *track) {
    if (index >= reader->collector.tracks.size()) return 0;
    *track = reader->collector.tracks[index];
    return 1;
}

void tessera_webm_select(tessera_webm_reader *reader, uint64_t video_track, uint64_t audio_track) {
    reader->collector.video_track = video_track;
    reader->collector.audio_track = audio_track;
}

int tessera_webm_next(tessera_webm_reader *reader, tessera_webm_frame *frame) {
    FrameCollector &collector = reader->collector;
    while (collector.ready.empty() && !reader->finished) {
        try {
            webm::Status status = reader->parser.Feed(&collector, &reader->file);
            if (status.code == webm::Status::kOkPartial) continue;
            if (is_damage(status)) {
                // A damaged element inside the clusters: go on from the next Cluster, as a
                // player does (tessera_webm_damage tells); an error only if no Cluster follows.
                collector.drop_block();
                const std::uint64_t position = reader->file.Position();
                if (reader->file.SeekToNextCluster()) {
                    if (reader->damage_status == 0) {
                        reader->damage_status = status.code;
                        reader->damage_position = position;
                        reader->resumed_at = reader->file.Position();
                    }
                    reader->parser.DidSeek();
                    continue;
                }
            }
            reader->finished = true;
            // A file cut short ends where it ends, as a recording killed mid-way does.
            reader->final_status = status.completed_ok() || status.code == webm::Status::kEndOfFile ? 0 : status.code;
        } catch (const std::bad_alloc &) {
            reader->finished = true;
            reader->final_status = TESSERA_WEBM_OUT_OF_MEMORY;
        }
    }
    if (collector.ready.empty()) return reader->final_status;
    reader->current = std::move(collector.ready.front());
    collector.ready.pop_front();
    frame->track = reader->current.track;
    frame->time_ns = reader->current.time_ns;
    frame->is_key = reader->current.is_key ? 1 : 0;
    frame->index_in_block = reader->current.index_in_block;
    frame->data = reader->current.data.data();
    frame->size = reader->current.data.size();
    return 1;
}

int tessera_webm_damage(const tessera_webm_reader *reader, uint64_t *position, uint64_t *resumed_at) {
    *position = reader->damage_position;
    *resumed_at = reader->resumed_at;
    return reader->damage_status;
}

const char *tessera_webm_status_name(int status) {
    switch (status) {
    case webm::Status::kEndOfFile: return "the file ends inside its header";
    case webm::Status::kInvalidElementId: return "invalid element ID";
    case webm::Status::kInvalidElementSize: return "invalid element size";
    case webm::Status::kIndefiniteUnknownElement: return "an unknown element of unknown size";
    case webm::Status::kElementOverflow: return "an element larger than its parent";
    case webm::Status::kNotEnoughMemory: return "an element too large to hold";
    case webm::Status::kInvalidElementValue: return "invalid element value";
    case webm::Status::kExceededRecursionDepthLimit: return "elements nested too deep";
    case TESSERA_WEBM_FRAME_TOO_LARGE: return "a frame over 64 MiB";
    case TESSERA_WEBM_OUT_OF_MEMORY: return "out of memory";
    default: return "malformed WebM";
    }
}

void tessera_webm_close(tessera_webm_reader *reader) { delete reader; }

}  // extern "C"
