// Tessera's page: join a room with camera and microphone, see the room's composite, hear your
// mix, follow who is there. Plain browser APIs, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { pc: null, location: null, events: null, room: null, recording: null, people: new Map(), received: [] };

$("identity").value ||= "guest-" + Math.random().toString(36).slice(2, 7);

function status(text) { $("status").textContent = text; }
function log(text) {
  const line = `${new Date().toLocaleTimeString()} ${text}\n`;
  $("log").textContent = line + $("log").textContent.slice(0, 4000);
}

function authHeaders() {
  const token = $("token").value.trim();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

async function api(method, path, body, type) {
  const headers = { ...authHeaders() };
  if (type) headers["Content-Type"] = type;
  const response = await fetch(path, { method, headers, body });
  if (!response.ok) {
    let reason = `${response.status}`;
    try { const error = await response.json(); reason = `${error.error}: ${error.detail}`; } catch (_) { /* not JSON */ }
    throw new Error(reason);
  }
  return response;
}

function renderPeople() {
  const list = $("people");
  list.replaceChildren(...[...state.people.values()].map((person) => {
    const item = document.createElement("li");
    item.textContent = person.name || person.identity;
    item.classList.toggle("speaking", !!person.speaking);
    return item;
  }));
}

async function refreshRoom() {
  try {
    const room = await (await api("GET", `/v1/rooms/${state.room}`)).json();
    state.people = new Map(room.participants.map((p) => [p.id, p]));
    renderPeople();
  } catch (error) { log(`room: ${error.message}`); }
}

function followEvents(room) {
  const token = $("token").value.trim();
  const url = `/v1/rooms/${room}/events` + (token ? `?token=${encodeURIComponent(token)}` : "");
  state.events = new EventSource(url);
  for (const type of ["joined", "left", "trackPublished", "trackEnded", "trackMuted", "trackUnmuted", "trackRendering", "trackStalled",
                      "activeSpeakerChanged", "layoutChanged", "recordingStarted", "recordingStopped"]) {
    state.events.addEventListener(type, (message) => {
      const event = JSON.parse(message.data);
      state.received = [...state.received.slice(-199), { ...event, type }];
      log(`${type} ${event.identity ?? ""} ${event.source ?? ""} ${event.reason ?? ""}`.trim());
      if (type === "joined" || type === "left") refreshRoom();
      if (type === "activeSpeakerChanged") {
        for (const person of state.people.values()) person.speaking = person.identity === event.identity;
        renderPeople();
      }
    });
  }
}

async function join(event) {
  event.preventDefault();
  const room = $("room").value.trim(), identity = $("identity").value.trim(), name = $("name").value.trim();
  $("joinButton").disabled = true;
  try {
    status("Asking for camera and microphone…");
    const local = await navigator.mediaDevices.getUserMedia({ audio: true, video: { width: 640, height: 360 } });
    $("self").srcObject = local;
    $("self").hidden = false;

    const pc = new RTCPeerConnection({ iceServers: [], bundlePolicy: "max-bundle", rtcpMuxPolicy: "require" });
    state.pc = pc;
    for (const track of local.getTracks()) pc.addTransceiver(track, { direction: "sendrecv", streams: [local] });
    pc.ontrack = ({ track }) => {
      if (track.kind === "video") $("composite").srcObject = new MediaStream([track]);
      else $("mix").srcObject = new MediaStream([track]);
    };
    pc.onconnectionstatechange = () => {
      status(`Connection: ${pc.connectionState}`);
      if (pc.connectionState === "failed") recover(pc);
    };

    await pc.setLocalDescription(await pc.createOffer());
    await gathered(pc);
    status("Joining…");
    const query = new URLSearchParams({ identity, ...(name ? { name } : {}) });
    const response = await api("POST", `/v1/rooms/${room}/participants?${query}`, pc.localDescription.sdp, "application/sdp");
    state.location = response.headers.get("Location");
    state.room = room;
    await pc.setRemoteDescription({ type: "answer", sdp: await response.text() });
    followEvents(room);
    refreshRoom();
    $("leaveButton").disabled = false;
    for (const button of document.querySelectorAll("[data-preset], #recordStart")) button.disabled = false;
    status("Joined; connecting media…");
  } catch (error) {
    status(`Could not join: ${error.message}`);
    leave();
  }
}

// The host is ICE-lite and announces its own candidate: an offer needs only what is gathered.
function gathered(pc) {
  return new Promise((resolve) => {
    if (pc.iceGatheringState === "complete") return resolve();
    pc.addEventListener("icegatheringstatechange", () => pc.iceGatheringState === "complete" && resolve());
    setTimeout(resolve, 2000);
  });
}

// Renegotiation: an offer PATCHed to the session, after a transceiver was added or stopped, or
// with `iceRestart` to restart ICE; the host's answer is applied.
async function renegotiate(pc, options = {}) {
  await pc.setLocalDescription(await pc.createOffer(options));
  await gathered(pc);
  const response = await api("PATCH", state.location, pc.localDescription.sdp, "application/sdp");
  await pc.setRemoteDescription({ type: "answer", sdp: await response.text() });
}

// Resolves true once `condition()` holds (polled every 250 ms), false after `ms`.
function waitFor(condition, ms) {
  return new Promise((resolve) => {
    const started = Date.now();
    const poll = () => {
      if (condition()) return resolve(true);
      if (Date.now() - started >= ms) return resolve(false);
      setTimeout(poll, 250);
    };
    poll();
  });
}

// A failed connection (the network changed, or dropped for a while) restarts ICE by
// renegotiation: an offer with new credentials PATCHed to the session. When the host refuses it
// (it no longer knows the session) or it does not bring the connection back within 10 s, the
// page leaves and joins again.
async function recover(pc) {
  if (state.recovering || state.pc !== pc) return;
  state.recovering = true;
  try {
    status("Connection lost: restarting ICE…");
    await renegotiate(pc, { iceRestart: true });
    if (!await waitFor(() => pc.connectionState === "connected", 10000)) throw new Error("the ICE restart did not reconnect");
    status("Connection: connected (restored)");
  } catch (error) {
    status(`Connection lost (${error.message}): joining again…`);
    await leave();
    $("join").requestSubmit();
  } finally {
    state.recovering = false;
  }
}

async function leave() {
  if (state.location) { try { await api("DELETE", state.location); } catch (_) { /* already gone */ } }
  state.events?.close();
  state.pc?.getSenders().forEach((sender) => sender.track?.stop());
  state.pc?.close();
  Object.assign(state, { pc: null, location: null, events: null, room: null, recording: null });
  state.people.clear();
  renderPeople();
  $("self").hidden = true;
  $("joinButton").disabled = false;
  $("leaveButton").disabled = true;
  for (const button of document.querySelectorAll("[data-preset], #recordStart, #recordStop")) button.disabled = true;
}

async function setLayout(preset) {
  try {
    await api("PUT", `/v1/rooms/${state.room}/layout`, JSON.stringify({ preset }), "application/json");
    log(`layout ${preset}`);
  } catch (error) { status(`Layout: ${error.message}`); }
}

async function startRecording() {
  try {
    state.recording = await (await api("POST", `/v1/rooms/${state.room}/recordings`, "{}", "application/json")).json();
    $("recordStart").disabled = true;
    $("recordStop").disabled = false;
    log(`recording ${state.recording.file}`);
  } catch (error) { status(`Recording: ${error.message}`); }
}

async function stopRecording() {
  if (!state.recording) return;
  try {
    await api("DELETE", `/v1/rooms/${state.room}/recordings/${state.recording.id}`);
    log(`recording finished: ${state.recording.file}`);
  } catch (error) { status(`Recording: ${error.message}`); }
  state.recording = null;
  $("recordStart").disabled = false;
  $("recordStop").disabled = true;
}

// --- Self-check: what this page receives, for diagnosis from the browser's console --------
//   await tessera.selfCheck()                                    the composite, the connection and
//                                                                 the browser's bandwidth estimate
//   await tessera.selfCheck({ tones: [440, 660], points: [[0.25, 0.25]] })
//                                                                 + the mix at those frequencies
//                                                                 + the composite's colour there
// The answer is plain JSON (the interop test, Interop/page_chromium.py, asks the same).
const check = { framesPresented: 0, audio: null };

// Frames of the composite shown so far (counted by the video element itself).
if ("requestVideoFrameCallback" in HTMLVideoElement.prototype) {
  const onFrame = () => { check.framesPresented++; $("composite").requestVideoFrameCallback(onFrame); };
  $("composite").requestVideoFrameCallback(onFrame);
}

// An AnalyserNode on the received mix (Chromium feeds remote audio to Web Audio only while it
// also plays in a media element: the <audio id="mix"> does that).
function mixAnalyser() {
  const track = $("mix").srcObject?.getAudioTracks()[0];
  if (!track) return null;
  if (check.audio?.track !== track) {
    check.audio?.context.close();
    const context = new AudioContext();
    const analyser = context.createAnalyser();
    analyser.fftSize = 8192;
    analyser.smoothingTimeConstant = 0;
    context.createMediaStreamSource(new MediaStream([track])).connect(analyser);
    check.audio = { track, context, analyser };
  }
  check.audio.context.resume();
  return check.audio.analyser;
}

// The mix's level at each frequency (dB, the strongest bin within 15 Hz of it) and how far that
// is above the noise floor (the median bin from 100 Hz to 4 kHz), over `ms` of listening.
async function toneLevels(frequencies, ms = 600) {
  const analyser = mixAnalyser();
  if (!analyser) return null;
  const bins = new Float32Array(analyser.frequencyBinCount), power = new Float64Array(bins.length);
  let snapshots = 0;
  for (const end = performance.now() + ms; performance.now() < end; snapshots++) {
    analyser.getFloatFrequencyData(bins);
    bins.forEach((db, i) => { power[i] += 10 ** (db / 10); });
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const binHz = analyser.context.sampleRate / analyser.fftSize;
  const db = (i) => Math.max(-200, 10 * Math.log10(power[i] / snapshots));
  const band = (low, high) => [...power.keys()].filter((i) => i * binHz >= low && i * binHz <= high);
  const floor = band(100, 4000).map(db).sort((a, b) => a - b);
  const floorDb = floor[Math.floor(floor.length / 2)];
  const peak = band(50, 8000).reduce((best, i) => (db(i) > db(best) ? i : best));
  const round = (x) => Math.round(x * 10) / 10;
  return {
    floorDb: round(floorDb), peakHz: round(peak * binHz), contextState: analyser.context.state,
    tones: frequencies.map((hz) => {
      const level = Math.max(...band(hz - 15, hz + 15).map(db));
      return { hz, db: round(level), aboveFloorDb: round(level - floorDb) };
    }),
  };
}

// The composite's colour around a point given as fractions of its size: the median of a patch
// of 1/20 of the picture each way, as [r, g, b] and #rrggbb.
function colourAt(x, y) {
  const video = $("composite"), width = video.videoWidth, height = video.videoHeight;
  if (!width || !height) return null;
  const canvas = check.canvas ??= document.createElement("canvas");
  Object.assign(canvas, { width, height });
  const context = canvas.getContext("2d", { willReadFrequently: true });
  context.drawImage(video, 0, 0, width, height);
  const w = Math.max(1, Math.round(width / 20)), h = Math.max(1, Math.round(height / 20));
  const left = Math.min(Math.max(0, Math.round(x * width - w / 2)), width - w);
  const top = Math.min(Math.max(0, Math.round(y * height - h / 2)), height - h);
  const data = context.getImageData(left, top, w, h).data;
  const rgb = [0, 1, 2].map((channel) => {
    const values = [];
    for (let i = channel; i < data.length; i += 4) values.push(data[i]);
    return values.sort((a, b) => a - b)[values.length >> 1];
  });
  return { x, y, rgb, hex: "#" + rgb.map((v) => v.toString(16).padStart(2, "0")).join("") };
}

async function selfCheck({ tones = [], points = [] } = {}) {
  const video = $("composite");
  const result = {
    room: state.room, connection: state.pc?.connectionState ?? "not joined",
    composite: { width: video.videoWidth, height: video.videoHeight, framesPresented: check.framesPresented,
                 framesDecoded: 0, keyFramesDecoded: 0, packetsLost: 0 },
    mix: { samplesReceived: 0, concealedSamples: 0 },
  };
  for (const report of (await state.pc?.getStats())?.values() ?? []) {
    // What the browser estimates it can receive (its REMB to the host): the host sends its lower
    // encoding of the composite when that is low.
    if (report.type === "candidate-pair" && report.nominated) result.incomingBitrateEstimate = report.availableIncomingBitrate;
    if (report.type !== "inbound-rtp") continue;
    if (report.kind === "video") {
      Object.assign(result.composite, { framesDecoded: report.framesDecoded ?? 0, keyFramesDecoded: report.keyFramesDecoded ?? 0,
                                        packetsLost: report.packetsLost ?? 0, decodedSize: `${report.frameWidth}x${report.frameHeight}` });
    } else if (report.kind === "audio") {
      Object.assign(result.mix, { samplesReceived: report.totalSamplesReceived ?? 0, concealedSamples: report.concealedSamples ?? 0 });
    }
  }
  if (tones.length) Object.assign(result.mix, await toneLevels(tones));
  if (points.length) result.colours = points.map(([x, y]) => colourAt(x, y));
  return result;
}

// For tests: an ICE restart as after a failure, then what the transport and the composite did:
// the checks answered on every candidate pair (after the restart only the new credentials are
// used) and the frames decoded, before and 4 s after.
async function restartIce() {
  const counts = async () => {
    let responses = 0, frames = 0;
    for (const report of (await state.pc?.getStats())?.values() ?? []) {
      if (report.type === "candidate-pair") responses += report.responsesReceived ?? 0;
      if (report.type === "inbound-rtp" && report.kind === "video") frames = report.framesDecoded ?? 0;
    }
    return { responses, frames };
  };
  const pc = state.pc, before = await counts(), ufrag = pc?.remoteDescription?.sdp.match(/a=ice-ufrag:(\S+)/)?.[1];
  await recover(pc);
  await new Promise((resolve) => setTimeout(resolve, 4000));
  const after = await counts();
  return { connection: state.pc?.connectionState, samePeerConnection: state.pc === pc, before, after,
           hostUfragChanged: state.pc?.remoteDescription?.sdp.match(/a=ice-ufrag:(\S+)/)?.[1] !== ufrag };
}

// For tests: a second video m-line added by renegotiation and sent (a yellow picture, as a screen
// share would be), then stopped by renegotiation; what the answers and the host's events said,
// and whether the composite's main tile showed the share and then gave it back.
async function addAndStopVideo(ms = 5000) {
  const pc = state.pc, identity = $("identity").value.trim();
  const canvas = Object.assign(document.createElement("canvas"), { width: 320, height: 180 });
  const context = canvas.getContext("2d");
  const yellow = [230, 220, 20];
  const paint = setInterval(() => {
    context.fillStyle = `rgb(${yellow.join(",")})`;
    context.fillRect(0, 0, canvas.width, canvas.height);
  }, 50);
  // In the presets' main tile (the top three quarters of the canvas; the share is fitted in
  // it) and, once it is given back, in the grid's first tile (not on a border between tiles).
  const mainTileIsYellow = () => {
    const seen = colourAt(0.3, 0.35);
    return !!seen && seen.rgb.every((value, channel) => Math.abs(value - yellow[channel]) <= 60);
  };
  const track = canvas.captureStream(15).getVideoTracks()[0];
  const said = (type) => state.received.some((e) => e.type === type && e.identity === identity && e.source === "screen");
  const result = {};
  try {
    const transceiver = pc.addTransceiver(track, { direction: "sendonly" });
    await renegotiate(pc);
    result.mid = transceiver.mid;
    result.published = await waitFor(() => said("trackPublished"), ms);
    result.shownInMainTile = await waitFor(mainTileIsYellow, ms);
    result.mainTileWhileShared = colourAt(0.3, 0.35)?.hex;
    transceiver.stop();
    await renegotiate(pc);
    result.answeredStopped = pc.remoteDescription.sdp.split("\r\nm=").some((m) => m.startsWith(`video 0 `) && m.includes(`a=mid:${result.mid}\r\n`));
    result.ended = await waitFor(() => said("trackEnded"), ms);
    result.tileGivenBack = await waitFor(() => !mainTileIsYellow(), ms);
    result.mainTileAfter = colourAt(0.3, 0.35)?.hex;
  } catch (error) {
    result.error = error.message;
  } finally {
    clearInterval(paint);
    track.stop();
  }
  result.connection = pc.connectionState;
  return result;
}

// For tests: the camera muted by the browser itself (its track disabled: black frames go out),
// then enabled again; whether the host said trackMuted and trackUnmuted for it.
async function muteCameraBySender(ms = 6000) {
  const identity = $("identity").value.trim();
  const camera = $("self").srcObject?.getVideoTracks()[0];
  if (!camera) return { error: "no camera" };
  const said = (type) => state.received.some((e) => e.type === type && e.identity === identity && e.source === "camera"
                                             && e.reason?.startsWith("sender"));
  camera.enabled = false;
  const muted = await waitFor(() => said("trackMuted"), ms);
  camera.enabled = true;
  const unmuted = await waitFor(() => said("trackUnmuted"), ms);
  return { muted, unmuted, connection: state.pc?.connectionState };
}

// For tests: the host forgets this session (as a host that restarted would), then the page
// recovers as after a failed connection: the ICE restart is refused and it joins again.
async function rejoinAfterLostSession(ms = 15000) {
  const pc = state.pc, location = state.location;
  await api("DELETE", location);
  await recover(pc);
  const rejoined = await waitFor(() => state.pc && state.pc !== pc && state.pc.connectionState === "connected", ms);
  const frames = async () => {
    for (const report of (await state.pc?.getStats())?.values() ?? []) {
      if (report.type === "inbound-rtp" && report.kind === "video") return report.framesDecoded ?? 0;
    }
    return 0;
  };
  const before = await frames();
  await new Promise((resolve) => setTimeout(resolve, 3000));
  return { rejoined, connection: state.pc?.connectionState, newSession: !!state.location && state.location !== location,
           status: $("status").textContent, before, after: await frames() };
}

window.tessera = { selfCheck, toneLevels, colourAt, restartIce, addAndStopVideo, muteCameraBySender, rejoinAfterLostSession };

$("join").addEventListener("submit", join);
$("leaveButton").addEventListener("click", leave);
for (const button of document.querySelectorAll("[data-preset]")) {
  button.addEventListener("click", () => setLayout(button.dataset.preset));
}
$("recordStart").addEventListener("click", startRecording);
$("recordStop").addEventListener("click", stopRecording);
window.addEventListener("pagehide", leave);

// `/?room=R&identity=I[&name=N][&token=T][&autojoin=1]` fills the form (and joins): links to
// share, and what the interop test opens.
{
  const query = new URLSearchParams(location.search);
  for (const field of ["room", "identity", "name", "token"]) if (query.has(field)) $(field).value = query.get(field);
  if (query.get("autojoin") === "1") $("join").requestSubmit();
}
