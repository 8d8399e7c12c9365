// Tessera's page, a meeting client: join a room with camera and microphone, see the room's
// composite and hear your mix; mute, stop the camera, share a screen, pick devices; see who is
// there and who speaks, stop hearing one guest, pin one guest's own camera; and, with an admin
// token (or none on a host without auth), the layout, a template editor and the recordings.
// Plain browser APIs, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  pc: null, location: null, pid: null, events: null, room: null, identity: null, local: null,
  recording: null, people: new Map(), received: [], admin: false, pinned: null, notHeard: new Set(),
  micMuted: false, cameraOff: false, share: null, pinTransceiver: null, poll: null, layout: null,
  cluster: false, rejoins: 0, rejoining: false, disconnectedTimer: null, joinedAt: null,
};

$("identity").value ||= "guest-" + Math.random().toString(36).slice(2, 7);

function status(text) { $("status").textContent = text; }
// What the person must act on: a refused token, a full room, no camera, an insecure page.
function message(text) { $("message").textContent = text ?? ""; }
function connection(stateName, text) {
  $("connection").dataset.state = stateName;
  $("connection").textContent = text;
}
function log(text) {
  const line = `${new Date().toLocaleTimeString()} ${text}\n`;
  $("log").textContent = line + $("log").textContent.slice(0, 6000);
}

function authHeaders() {
  const token = $("token").value.trim();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

// An API call; a refusal throws an Error whose message says it as a person should read it, and
// whose `status` and `reason` are the host's.
async function api(method, path, body, type) {
  const headers = { ...authHeaders() };
  if (type) headers["Content-Type"] = type;
  let response = await fetch(withClusterToken(path), { method, headers, body });
  if (response.status === 401 && response.redirected && headers.Authorization && !state.cluster) {
    // Redirected to another host of a cluster, and the browser dropped Authorization on the way:
    // from now on the token rides in the query too.
    state.cluster = true;
    response = await fetch(withClusterToken(path), { method, headers, body });
  }
  if (!response.ok) {
    let reason = "", detail = "";
    try { ({ error: reason, detail } = await response.json()); } catch (_) { /* not JSON */ }
    const error = new Error(explain(response.status, reason, detail));
    Object.assign(error, { status: response.status, reason });
    throw error;
  }
  return response;
}

function explain(status, reason, detail) {
  const why = detail ? ` (${detail})` : "";
  if (status === 401) return `The host refused the token${why}. Ask whoever invited you for a new link.`;
  if (status === 403) return `Your token does not allow this${why}.`;
  if (status === 503 && reason === "room full") return `The room is full${why}. Try again when someone leaves.`;
  if (status === 503) return `The host cannot take this now${why}.`;
  return `${status} ${reason || "error"}${why}`;
}

// In a cluster a call may be redirected (307) to the room's host, another origin: browsers
// drop the Authorization header on such a redirect, so the token goes in the query too
// (docs/api.md, "Many hosts"). A join always sends it so (it may be the call redirected); the
// calls after it do once the session turned out to be on another origin.
function withClusterToken(path, always = false) {
  const token = $("token").value.trim();
  if (!token || !(always || state.cluster)) return path;
  const url = new URL(path, location.href);
  url.searchParams.set("token", token);
  return url.origin === location.origin ? url.pathname + url.search : url.href;
}

// Browsers give camera and microphone only to secure pages: https://, or http:// on this machine.
function insecurePage() {
  return !window.isSecureContext || !navigator.mediaDevices?.getUserMedia;
}
if (insecurePage()) {
  message(`This page was opened over ${location.protocol}// from another machine: browsers allow the camera and microphone only on `
          + `https:// pages (or on localhost). Open https://${location.host}/ (the host serves HTTPS when its config has http.tls).`);
}

// Camera and microphone; without the camera (refused, or none), the microphone alone; without
// either, nothing: the guest still sees and hears the room.
async function localMedia() {
  const video = { width: 640, height: 360 };
  try {
    return await navigator.mediaDevices.getUserMedia({ audio: true, video });
  } catch (error) {
    if (error.name !== "NotAllowedError" && error.name !== "NotFoundError" && error.name !== "NotReadableError") throw error;
    try {
      const audio = await navigator.mediaDevices.getUserMedia({ audio: true });
      message("No camera: its permission was refused or it is in use. You joined with the microphone only; allow the camera in the browser's site settings and join again to send video.");
      return audio;
    } catch (_) {
      message("No camera or microphone: their permission was refused. You joined to watch and listen; allow them in the browser's site settings and join again to take part.");
      return new MediaStream();
    }
  }
}

// --- The people in the room -------------------------------------------------------------

// A toggle in a guest's row: says whose it is to a screen reader, and what it does (`action`, for tests).
function rowToggle(text, person, action, pressed, onClick) {
  const b = button(text, onClick, pressed);
  b.dataset.action = action;
  b.setAttribute("aria-label", `${text} ${person.name || person.identity}`);
  return b;
}

function button(text, onClick, pressed) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.classList.add("secondary");
  if (pressed !== undefined) b.setAttribute("aria-pressed", String(pressed));
  b.addEventListener("click", onClick);
  return b;
}

// Drawn anew at each refresh (every second): a button that had the keyboard focus gets it back.
function renderPeople() {
  const list = $("people");
  const focused = document.activeElement?.closest?.("#people li") && document.activeElement;
  const refocus = focused && { identity: focused.closest("li").dataset.identity, action: focused.dataset.action };
  list.replaceChildren(...[...state.people.values()].map((person) => {
    const item = document.createElement("li");
    item.dataset.identity = person.identity;
    item.classList.toggle("speaking", !!person.speaking);
    const who = document.createElement("span");
    who.className = "who";
    const meter = document.createElement("span");
    meter.className = "meter";
    meter.setAttribute("aria-hidden", "true");
    const bar = document.createElement("span");
    // dBov: -60 and below shows empty, 0 full.
    bar.style.width = `${Math.max(0, Math.min(100, ((person.audioLevel ?? -127) + 60) / 60 * 100))}%`;
    meter.append(bar);
    const name = document.createElement("span");
    const self = person.identity === state.identity;
    name.textContent = (person.name || person.identity) + (self ? " (you)" : "");
    const notes = [person.speaking ? "speaking" : "", person.muted?.audio ? "muted" : "", person.muted?.video ? "camera off" : "",
                   person.tracks?.some((t) => t.source === "screen" && t.state === "live") ? "sharing" : ""].filter(Boolean);
    const note = document.createElement("span");
    note.className = "state";
    note.textContent = notes.join(", ");
    who.append(meter, name, note);
    const actions = document.createElement("span");
    actions.className = "actions";
    if (!self) {
      const deaf = state.notHeard.has(person.identity);
      const hearButton = rowToggle(deaf ? "Hear" : "Don't hear", person, "hear", deaf, () => setHeard(person.identity, deaf));
      const pinned = state.pinned === person.identity;
      const pinButton = rowToggle(pinned ? "Unpin" : "Pin", person, "pin", pinned, () => (pinned ? unpin() : pin(person.identity)));
      pinButton.disabled = !person.tracks?.some((t) => t.source === "camera" && t.state === "live") && !pinned;
      actions.append(hearButton, pinButton);
    }
    item.append(who, actions);
    return item;
  }));
  if (refocus) list.querySelector(`li[data-identity="${CSS.escape(refocus.identity)}"] button[data-action="${refocus.action}"]`)?.focus();
}

// The room as it is now: who is there (levels, mutes, tracks), the layout, a recording running.
async function refreshRoom() {
  if (!state.room) return null;
  try {
    const room = await (await api("GET", `/v1/rooms/${state.room}`)).json();
    state.people = new Map(room.participants.map((p) => [p.identity, p]));
    const me = state.people.get(state.identity);
    if (me) state.notHeard = new Set(me.notHeard);
    const running = room.recordings?.[0] ?? null;
    if (!!running !== !!state.recording) showRecording(running);
    state.layout = room.layout;
    renderPeople();
    return room;
  } catch (error) {
    if (error.status === 404) return null;   // the room closed
    log(`room: ${error.message}`);
    return null;
  }
}

function showRecording(recording) {
  state.recording = recording;
  $("recordingBadge").hidden = !recording;
  $("recordStart").disabled = !!recording;
  $("recordStop").disabled = !recording;
}

function followEvents(room) {
  const token = $("token").value.trim();
  const url = `/v1/rooms/${room}/events` + (token ? `?token=${encodeURIComponent(token)}` : "");
  state.events = new EventSource(url);
  for (const type of ["joined", "left", "trackPublished", "trackEnded", "trackMuted", "trackUnmuted", "trackRendering", "trackStalled",
                      "activeSpeakerChanged", "layoutChanged", "recordingStarted", "recordingStopped"]) {
    state.events.addEventListener(type, (event) => {
      const data = JSON.parse(event.data);
      state.received = [...state.received.slice(-199), { ...data, type }];
      log(`${type} ${data.identity ?? ""} ${data.source ?? ""} ${data.reason ?? ""}`.trim());
      if (type === "activeSpeakerChanged") {
        for (const person of state.people.values()) person.speaking = person.identity === data.identity;
        renderPeople();
      } else if (type === "recordingStarted" || type === "recordingStopped") {
        refreshRoom();
        if (state.admin) listRecordings();
      } else if (type === "trackEnded" && data.identity === state.pinned && data.source === "camera") {
        unpin();
      } else {
        refreshRoom();
      }
    });
  }
}

// --- Joining and leaving ----------------------------------------------------------------

/** The camera's simulcast layers: a quarter, half and the whole picture, smallest first. */
const simulcastEncodings = [{ rid: "q", scaleResolutionDownBy: 4 }, { rid: "h", scaleResolutionDownBy: 2 }, { rid: "f" }];

async function join(event) {
  event?.preventDefault();
  const room = $("room").value.trim(), identity = $("identity").value.trim(), name = $("name").value.trim();
  message(insecurePage() ? $("message").textContent : "");
  try {
    await enter(room, identity, name);
  } catch (error) {
    status("");
    message(`Could not join: ${error.message}`);
    connection("failed", "Not joined");
    await leave();
  }
}

// Joins: camera and microphone, the offer POSTed (through the host this page came from, which
// redirects to the room's host in a cluster), the answer applied. Throws what went wrong.
async function enter(room, identity, name) {
  $("joinButton").disabled = true;
  if (!state.rejoining) connection("connecting", "Connecting");   // a rejoin keeps showing "Reconnecting…"
  status("Asking for camera and microphone…");
  const local = insecurePage() ? new MediaStream() : await localMedia();
  state.local = local;
  $("self").srcObject = local;
  $("self").hidden = local.getVideoTracks().length === 0;

  const pc = new RTCPeerConnection({ iceServers: [], bundlePolicy: "max-bundle", rtcpMuxPolicy: "require" });
  state.pc = pc;
  // Microphone, then camera (each sends and receives: the mix and the composite come back on
  // them), even without the device (receive only); then one receive-only video m-line for a
  // pinned guest's camera (a subscription).
  const audio = local.getAudioTracks()[0], video = local.getVideoTracks()[0];
  pc.addTransceiver(audio ?? "audio", { direction: audio ? "sendrecv" : "recvonly", streams: [local] });
  // The camera in three simulcast layers (RFC 8853), as the host asks: it decodes only the
  // layer nearest the camera's tile in the composite (a grid of many takes the smallest).
  pc.addTransceiver(video ?? "video", { direction: video ? "sendrecv" : "recvonly", streams: [local],
                                        sendEncodings: video ? simulcastEncodings : undefined });
  state.pinTransceiver = pc.addTransceiver("video", { direction: "recvonly" });
  pc.ontrack = ({ track, transceiver }) => {
    if (transceiver === state.pinTransceiver) $("pinnedVideo").srcObject = new MediaStream([track]);
    else if (track.kind === "video") $("composite").srcObject = new MediaStream([track]);
    else $("mix").srcObject = new MediaStream([track]);
  };
  pc.onconnectionstatechange = () => {
    const now = pc.connectionState;
    if (state.pc !== pc) return;
    clearTimeout(state.disconnectedTimer);
    if (now === "connected") connection("connected", "Connected");
    else if (now === "disconnected") {
      connection("reconnecting", "Connection unstable…");
      // Disconnected for long is as good as failed (the browser takes 30 s to say failed).
      state.disconnectedTimer = setTimeout(() => state.pc === pc && pc.connectionState === "disconnected" && recover(pc),
                                           disconnectedPatience);
    } else if (now === "failed") recover(pc);
    status(`Connection: ${now}`);
  };

  await pc.setLocalDescription(await pc.createOffer());
  await gathered(pc);
  status("Joining…");
  const query = new URLSearchParams({ identity, ...(name ? { name } : {}) });
  const response = await api("POST", withClusterToken(`/v1/rooms/${room}/participants?${query}`, true), pc.localDescription.sdp,
                              "application/sdp");
  state.location = response.headers.get("Location");
  // A session on another origin: this room is on another host of a cluster.
  state.cluster = !!state.location && new URL(state.location, location.href).origin !== location.origin;
  state.joinedAt = Date.now();
  state.pid = state.location?.split("/").pop() ?? null;
  Object.assign(state, { room, identity, micMuted: false, cameraOff: false });
  await pc.setRemoteDescription({ type: "answer", sdp: await response.text() });
  followEvents(room);
  await arrive(room);
  status("Joined; connecting media…");
}

// What one who joins late should see at once: who is there, the layout, a recording running;
// then the controls the token allows.
async function arrive(room) {
  $("roomTitle").textContent = `Room ${room}`;
  $("lobby").hidden = true;
  const invite = new URL(location.origin + location.pathname);
  invite.searchParams.set("room", room);
  $("invite").value = invite.href;
  for (const id of ["leaveButton", "micButton", "cameraButton", "shareButton"]) $(id).disabled = false;
  $("cameraButton").disabled = state.local.getVideoTracks().length === 0;
  $("micButton").disabled = state.local.getAudioTracks().length === 0;
  $("shareButton").disabled = !navigator.mediaDevices?.getDisplayMedia;
  renderToggles();
  const shown = await refreshRoom();
  if (shown) {
    const others = shown.participants.map((p) => p.name || p.identity).filter((n) => n !== state.identity);
    log(`in the room: ${others.length ? others.join(", ") : "nobody else yet"}; layout ${shown.preset ?? "a template"}`
        + (shown.recordings?.length ? `; recording ${shown.recordings[0].file}` : ""));
  }
  // Admin: the recordings list answers only an admin token (or a host without auth).
  try {
    await api("GET", `/v1/rooms/${room}/recordings`);
    state.admin = true;
  } catch (_) { state.admin = false; }
  $("admin").hidden = !state.admin;
  if (state.admin) { listRecordings(); loadEditor(); }
  listDevices();
  state.poll = setInterval(refreshRoom, 1000);
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

/** How long the connection may stay `disconnected` before the page recovers it. */
const disconnectedPatience = 4000;

// A failed connection (the network changed, or dropped for a while) restarts ICE by
// renegotiation: an offer with new credentials PATCHed to the session. When the host refuses it
// (it no longer knows the session), cannot be reached (it died), or it does not bring the
// connection back within 10 s, the page joins again (`rejoin`).
async function recover(pc) {
  if (state.recovering || state.pc !== pc) return;
  state.recovering = true;
  try {
    connection("reconnecting", "Reconnecting…");
    status("Connection lost: restarting ICE…");
    await renegotiate(pc, { iceRestart: true });
    if (!await waitFor(() => pc.connectionState === "connected", 10000)) throw new Error("the ICE restart did not reconnect");
    connection("connected", "Connected");
    status("Connection: connected (restored)");
  } catch (error) {
    await rejoin(error.message);
  } finally {
    state.recovering = false;
  }
}

// Joins again, same room and identity, through the host this page was loaded from: in a
// cluster it redirects the join to the room's host, and places the room anew once a dead
// host's lease has lapsed (within 5 s). Bounded: 8 tries within 40 s, 0.5 s to 4 s apart.
async function rejoin(reason) {
  const room = state.room, identity = state.identity, name = $("name").value.trim();
  const started = Date.now();
  state.rejoining = true;
  try {
    await leave();
    for (let attempt = 1, wait = 500; attempt <= 8 && Date.now() - started < 40000; attempt++, wait = Math.min(wait * 2, 4000)) {
      connection("reconnecting", `Reconnecting… (try ${attempt})`);
      status(`Connection lost (${reason}): joining again, try ${attempt}…`);
      try {
        await enter(room, identity, name);
        state.rejoins += 1;
        log(`joined again after ${((Date.now() - started) / 1000).toFixed(1)} s (try ${attempt})`);
        return true;
      } catch (error) {
        reason = error.message;
        await leave();
        connection("reconnecting", `Reconnecting… (try ${attempt + 1})`);
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
    connection("failed", "Not joined");
    message(`Could not join again: ${reason}`);
    return false;
  } finally {
    state.rejoining = false;
  }
}

async function leave() {
  clearTimeout(state.disconnectedTimer);
  // At most 2 s: the session's host may be dead, and a browser waits long for a machine that
  // does not answer (a rejoin must not wait for it).
  if (state.location) {
    const gone = api("DELETE", state.location).catch(() => { /* already gone */ });
    await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 2000))]);
  }
  state.events?.close();
  clearInterval(state.poll);
  state.local?.getTracks().forEach((track) => track.stop());
  state.share?.track.stop();
  state.pc?.close();
  Object.assign(state, { pc: null, location: null, pid: null, events: null, room: null, recording: null, local: null, share: null,
                         pinned: null, pinTransceiver: null, admin: false, poll: null });
  state.people.clear();
  state.notHeard.clear();
  renderPeople();
  showPinned(null);
  $("self").hidden = true;
  $("lobby").hidden = false;
  $("admin").hidden = true;
  $("recordingBadge").hidden = true;
  $("roomTitle").textContent = "";
  $("joinButton").disabled = false;
  for (const id of ["leaveButton", "micButton", "cameraButton", "shareButton"]) $(id).disabled = true;
  if ($("connection").dataset.state !== "failed" && !state.rejoining) connection("idle", "Not joined");
}

// --- Your microphone, camera and screen ---------------------------------------------------

function renderToggles() {
  $("micButton").setAttribute("aria-pressed", String(state.micMuted));
  $("micButton").textContent = state.micMuted ? "Unmute microphone" : "Mute microphone";
  $("cameraButton").setAttribute("aria-pressed", String(state.cameraOff));
  $("cameraButton").textContent = state.cameraOff ? "Start camera" : "Stop camera";
  $("shareButton").setAttribute("aria-pressed", String(!!state.share));
  $("shareButton").textContent = state.share ? "Stop sharing" : "Share screen";
}

// Muting is said to the host (its `muted`: the room stops mixing you, your tile shows your
// placeholder, everyone gets the event) and done at the source (the track sends silence or black).
async function setMuted(kind, muted) {
  try {
    await api("PATCH", state.location, JSON.stringify({ muted: { [kind]: muted } }), "application/json");
    for (const track of kind === "audio" ? state.local.getAudioTracks() : state.local.getVideoTracks()) track.enabled = !muted;
    if (kind === "audio") state.micMuted = muted; else state.cameraOff = muted;
    renderToggles();
    refreshRoom();
  } catch (error) { message(`${kind === "audio" ? "Microphone" : "Camera"}: ${error.message}`); }
}

// A screen share is a second sending video m-line, added by renegotiation and stopped by it;
// the browser's own "stop sharing" ends it the same way.
async function toggleShare() {
  if (state.share) return stopShare();
  let stream;
  try {
    stream = await navigator.mediaDevices.getDisplayMedia({ video: { frameRate: 15 }, audio: false });
  } catch (error) {
    message(error.name === "NotAllowedError" ? "Screen sharing was not allowed." : `Screen sharing: ${error.message}`);
    return;
  }
  const track = stream.getVideoTracks()[0];
  try {
    const transceiver = state.pc.addTransceiver(track, { direction: "sendonly", streams: [stream] });
    state.share = { track, transceiver };
    track.addEventListener("ended", () => state.share?.track === track && stopShare());
    renderToggles();
    await renegotiate(state.pc);
    log("sharing the screen");
  } catch (error) {
    message(`Screen sharing: ${error.message}`);
    await stopShare();
  }
}

async function stopShare() {
  const share = state.share;
  if (!share) return;
  state.share = null;
  renderToggles();
  share.track.stop();
  try {
    share.transceiver.stop();
    if (state.pc) await renegotiate(state.pc);
  } catch (error) { log(`stopping the share: ${error.message}`); }
}

// Devices: a new microphone or camera replaces the track being sent (no renegotiation);
// speakers are where the mix plays.
async function listDevices() {
  if (!navigator.mediaDevices?.enumerateDevices) return;
  const devices = await navigator.mediaDevices.enumerateDevices();
  const fill = (select, kind, current) => {
    const options = devices.filter((d) => d.kind === kind).map((d, i) => {
      const option = document.createElement("option");
      option.value = d.deviceId;
      option.textContent = d.label || `${kind} ${i + 1}`;
      option.selected = d.deviceId === current;
      return option;
    });
    select.replaceChildren(...options);
    select.disabled = options.length === 0;
  };
  fill($("micSelect"), "audioinput", state.local?.getAudioTracks()[0]?.getSettings().deviceId);
  fill($("cameraSelect"), "videoinput", state.local?.getVideoTracks()[0]?.getSettings().deviceId);
  fill($("speakerSelect"), "audiooutput", $("mix").sinkId);
  $("speakerSelect").disabled ||= !("setSinkId" in HTMLMediaElement.prototype);
}

async function useDevice(kind, deviceId) {
  if (!state.pc || !state.local) return;
  try {
    const constraints = kind === "audio" ? { audio: { deviceId: { exact: deviceId } } }
                                         : { video: { deviceId: { exact: deviceId }, width: 640, height: 360 } };
    const track = (await navigator.mediaDevices.getUserMedia(constraints)).getTracks()[0];
    const sender = state.pc.getSenders().find((s) => s.track?.kind === kind && s.track !== state.share?.track);
    const old = kind === "audio" ? state.local.getAudioTracks()[0] : state.local.getVideoTracks()[0];
    track.enabled = !(kind === "audio" ? state.micMuted : state.cameraOff);
    await sender?.replaceTrack(track);
    if (old) { state.local.removeTrack(old); old.stop(); }
    state.local.addTrack(track);
    log(`${kind === "audio" ? "microphone" : "camera"}: ${track.label}`);
  } catch (error) { message(`Could not switch the ${kind === "audio" ? "microphone" : "camera"}: ${error.message}`); }
}

// --- Hearing and pinning other guests ----------------------------------------------------

// "Don't hear": the host leaves that guest out of your mix only (seed 002's isEnabled = false).
async function setHeard(identity, heard) {
  try {
    await api("PATCH", state.location, JSON.stringify({ hear: { [identity]: heard } }), "application/json");
    if (heard) state.notHeard.delete(identity); else state.notHeard.add(identity);
    renderPeople();
  } catch (error) { message(`Hearing ${identity}: ${error.message}`); }
}

// Pin: that guest's own camera, as they send it, on the page's receive-only m-line (a
// subscription, forwarded without re-encoding), shown large beside the composite.
async function pin(identity) {
  try {
    if (state.pinned) await unpin();
    const subscription = await (await api("POST", `${state.location}/subscriptions`,
                                          JSON.stringify({ participant: identity, source: "camera" }), "application/json")).json();
    state.pinned = identity;
    showPinned(identity);
    log(`pinned ${identity} (m-line ${subscription.mid})`);
  } catch (error) { message(`Pinning ${identity}: ${error.message}`); }
  renderPeople();
}

async function unpin() {
  const identity = state.pinned;
  if (!identity) return;
  state.pinned = null;
  showPinned(null);
  renderPeople();
  try { await api("DELETE", `${state.location}/subscriptions/${encodeURIComponent(identity)}/camera?all=1`); } catch (_) { /* ended */ }
}

function showPinned(identity) {
  $("pinned").hidden = !identity;
  $("stage").classList.toggle("pinned", !!identity);
  const person = identity && state.people.get(identity);
  $("pinnedCaption").textContent = identity ? `Pinned: ${person?.name || identity}` : "";
}

// --- Admin: layout, template editor, recordings ---------------------------------------------

async function setLayout(preset) {
  try {
    await api("PUT", `/v1/rooms/${state.room}/layout`, JSON.stringify({ preset }), "application/json");
    log(`layout ${preset}`);
    loadEditor();
  } catch (error) { message(`Layout: ${error.message}`); }
}

async function startRecording() {
  try {
    showRecording(await (await api("POST", `/v1/rooms/${state.room}/recordings`, "{}", "application/json")).json());
    log(`recording ${state.recording.file}`);
  } catch (error) { message(`Recording: ${error.message}`); }
}

async function stopRecording() {
  if (!state.recording) return;
  try {
    await api("DELETE", `/v1/rooms/${state.room}/recordings/${state.recording.id}`);
    log(`recording finished: ${state.recording.file}`);
  } catch (error) { message(`Recording: ${error.message}`); }
  showRecording(null);
  listRecordings();
}

async function listRecordings() {
  try {
    const { recordings } = await (await api("GET", `/v1/rooms/${state.room}/recordings`)).json();
    $("recordings").replaceChildren(...recordings.map((r) => {
      const item = document.createElement("li");
      const what = document.createElement("span");
      const seconds = r.duration != null ? `${Math.round(r.duration)} s` : "";
      const size = r.size != null ? `${(r.size / 1e6).toFixed(1)} MB` : "";
      what.textContent = [r.file, r.state, seconds, size].filter(Boolean).join(" · ");
      item.append(what);
      if (r.state === "finished") {
        const get = button("Download", () => download(r.file));
        get.dataset.file = r.file;
        get.setAttribute("aria-label", `Download ${r.file}`);
        item.append(get);
      }
      return item;
    }));
  } catch (error) { log(`recordings: ${error.message}`); }
}

// Fetched with the token (a plain link could not send it), then saved under its name.
async function download(file) {
  try {
    const blob = await (await api("GET", `/v1/recordings/${encodeURIComponent(file)}`)).blob();
    const link = Object.assign(document.createElement("a"), { href: URL.createObjectURL(blob), download: file });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60000);
    log(`downloaded ${file}`);
  } catch (error) { message(`Download: ${error.message}`); }
}

// The template editor: the layout in use as tiles on a 16:9 board, moved by dragging (the
// corner grip resizes) or by the arrow keys (Shift resizes), put in use by Save (PUT layout).
const editor = { template: null };

async function loadEditor() {
  try {
    editor.template = await (await api("GET", `/v1/rooms/${state.room}/layout`)).json();
  } catch (error) {
    if (error.status !== 404) log(`layout: ${error.message}`);
    editor.template = { canvas: { width: 1280, height: 720 }, positions: [] };
  }
  const known = new Set(editor.template.positions.map((p) => p.participant));
  // Guests the layout in use has no tile for get one to place.
  for (const person of state.people.values()) {
    if (!known.has(person.identity)) editor.template.positions.push({ participant: person.identity, source: "camera",
                                                                      rect: { x: 0.35, y: 0.35, width: 0.3, height: 0.3 } });
  }
  renderEditor();
}

function renderEditor() {
  const board = $("editor");
  // Counts the drawings, so that a test can wait for the tiles Save draws anew before using them.
  board.dataset.revision = String(Number(board.dataset.revision ?? 0) + 1);
  board.style.aspectRatio = `${editor.template.canvas.width} / ${editor.template.canvas.height}`;
  board.replaceChildren(...editor.template.positions.map((position, index) => {
    const tile = document.createElement("div");
    tile.className = "tile";
    tile.tabIndex = 0;
    tile.dataset.index = index;
    tile.dataset.participant = position.participant;
    tile.setAttribute("role", "button");
    tile.setAttribute("aria-label", `Tile of ${position.participant} (${position.source ?? "camera"}): arrows move it, Shift with arrows resizes it`);
    tile.textContent = `${position.participant}${position.source === "screen" ? " (screen)" : ""}`;
    const grip = document.createElement("span");
    grip.className = "grip";
    tile.append(grip);
    placeTile(tile, position.rect);
    tile.addEventListener("pointerdown", (event) => dragTile(event, tile, position, event.target === grip));
    tile.addEventListener("keydown", (event) => nudgeTile(event, tile, position));
    return tile;
  }));
}

function placeTile(tile, rect) {
  Object.assign(tile.style, { left: `${rect.x * 100}%`, top: `${rect.y * 100}%`, width: `${rect.width * 100}%`, height: `${rect.height * 100}%` });
}

// Keeps a rect on the canvas and at least 5 % each way.
function clampRect(rect) {
  const width = Math.min(1, Math.max(0.05, rect.width)), height = Math.min(1, Math.max(0.05, rect.height));
  const round = (v) => Math.round(v * 1000) / 1000;
  return { x: round(Math.min(1 - width, Math.max(0, rect.x))), y: round(Math.min(1 - height, Math.max(0, rect.y))),
           width: round(width), height: round(height) };
}

function dragTile(event, tile, position, resizing) {
  event.preventDefault();
  tile.focus();
  const board = $("editor").getBoundingClientRect(), start = { ...position.rect }, x0 = event.clientX, y0 = event.clientY;
  tile.setPointerCapture(event.pointerId);
  const move = (e) => {
    const dx = (e.clientX - x0) / board.width, dy = (e.clientY - y0) / board.height;
    position.rect = clampRect(resizing ? { ...start, width: start.width + dx, height: start.height + dy }
                                        : { ...start, x: start.x + dx, y: start.y + dy });
    placeTile(tile, position.rect);
  };
  const end = () => {
    tile.removeEventListener("pointermove", move);
    tile.removeEventListener("pointerup", end);
    tile.removeEventListener("pointercancel", end);
  };
  tile.addEventListener("pointermove", move);
  tile.addEventListener("pointerup", end);
  tile.addEventListener("pointercancel", end);
}

function nudgeTile(event, tile, position) {
  const step = 0.05, moves = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
  const move = moves[event.key];
  if (!move) return;
  event.preventDefault();
  const r = position.rect;
  position.rect = clampRect(event.shiftKey ? { ...r, width: r.width + move[0], height: r.height + move[1] }
                                           : { ...r, x: r.x + move[0], y: r.y + move[1] });
  placeTile(tile, position.rect);
}

async function saveTemplate() {
  if (!editor.template) return;
  try {
    const template = { canvas: editor.template.canvas, positions: editor.template.positions };
    editor.template = await (await api("PUT", `/v1/rooms/${state.room}/layout`, JSON.stringify(template), "application/json")).json();
    renderEditor();
    log("template saved");
  } catch (error) { message(`Template: ${error.message}`); }
}

// --- The landing page: the rooms open now (when the host lists them to this visitor) ------

async function listRooms() {
  try {
    const { rooms } = await (await api("GET", "/v1/rooms")).json();
    $("roomList").replaceChildren(...rooms.map((r) => Object.assign(document.createElement("option"), { value: r.name })));
    $("rooms").textContent = rooms.length ? `Open now: ${rooms.map((r) => `${r.name} (${r.participants})`).join(", ")}` : "No room is open yet.";
  } catch (_) { $("rooms").textContent = ""; }
}

// --- Self-check: what this page receives, for diagnosis from the browser's console --------
//   await tessera.selfCheck()                                    the composite, the connection,
//                                                                 the browser's bandwidth estimate
//                                                                 and the microphone's packets sent
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

// The composite's (or another <video>'s) colour around a point given as fractions of its size: the median of a patch
// of 1/20 of the picture each way, as [r, g, b] and #rrggbb.
function colourAt(x, y, videoId = "composite") {
  const video = $(videoId), width = video.videoWidth, height = video.videoHeight;
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

// Whether a video inbound-rtp report is the composite's (not a pinned guest's camera).
function isComposite(report) {
  const track = $("composite").srcObject?.getVideoTracks()[0];
  return !track || !report.trackIdentifier || report.trackIdentifier === track.id;
}

async function selfCheck({ tones = [], points = [] } = {}) {
  const video = $("composite");
  const result = {
    room: state.room, connection: state.pc?.connectionState ?? "not joined",
    composite: { width: video.videoWidth, height: video.videoHeight, framesPresented: check.framesPresented,
                 framesDecoded: 0, keyFramesDecoded: 0, packetsLost: 0 },
    mix: { samplesReceived: 0, concealedSamples: 0 },
    microphone: { packetsSent: 0 },
  };
  for (const report of (await state.pc?.getStats())?.values() ?? []) {
    // What the browser estimates it can receive (its REMB to the host): the host sends its lower
    // encoding of the composite when that is low.
    if (report.type === "candidate-pair" && report.nominated) result.incomingBitrateEstimate = report.availableIncomingBitrate;
    // The microphone's packets: in silence (muted) the browser sends few, as the host's usedtx=1 asks.
    if (report.type === "outbound-rtp" && report.kind === "audio") result.microphone.packetsSent += report.packetsSent ?? 0;
    if (report.type !== "inbound-rtp") continue;
    if (report.kind === "video" && isComposite(report)) {
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
      if (report.type === "inbound-rtp" && report.kind === "video" && isComposite(report)) frames = report.framesDecoded ?? 0;
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
  const composite = async () => {
    for (const report of (await state.pc?.getStats())?.values() ?? []) {
      if (report.type === "inbound-rtp" && report.kind === "video" && isComposite(report)) return report;
    }
    return null;
  };
  const frames = async () => (await composite())?.framesDecoded ?? 0;
  // 3 s after the connection is back, sampled so that a failure says whether the first picture
  // was late or the pictures stopped after it, and what the receiver asked for meanwhile.
  const before = await frames(), started = Date.now();
  let firstFrameMs = null;
  while (Date.now() - started < 3000) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (firstFrameMs === null && await frames() > before) firstFrameMs = Date.now() - started;
  }
  const r = await composite();
  const receiver = r && { packetsReceived: r.packetsReceived, packetsLost: r.packetsLost, nacks: r.nackCount, plis: r.pliCount,
                          keyFramesDecoded: r.keyFramesDecoded, framesReceived: r.framesReceived, framesDropped: r.framesDropped,
                          freezes: r.freezeCount, size: `${r.frameWidth}x${r.frameHeight}` };
  return { rejoined, connection: state.pc?.connectionState, newSession: !!state.location && state.location !== location,
           status: $("status").textContent, before, after: r?.framesDecoded ?? 0, firstFrameMs, receiver };
}

// What a person sees, for tests and diagnosis: the pinned guest's picture (its size and the
// colour at its centre), the controls' states, the people listed and the messages shown.
function meetingCheck() {
  const pinned = $("pinnedVideo");
  return {
    connection: $("connection").dataset.state, message: $("message").textContent,
    micMuted: state.micMuted, cameraOff: state.cameraOff, sharing: !!state.share, admin: !$("admin").hidden,
    recording: !$("recordingBadge").hidden, pinned: state.pinned,
    pinnedVideo: $("pinned").hidden ? null : { width: pinned.videoWidth, height: pinned.videoHeight, centre: colourAt(0.5, 0.5, "pinnedVideo") },
    people: [...$("people").children].map((li) => ({ identity: li.dataset.identity, speaking: li.classList.contains("speaking"),
                                                     text: li.textContent })),
    recordings: [...$("recordings").querySelectorAll("button[data-file]")].map((b) => b.dataset.file),
    invite: $("invite").value, log: $("log").textContent.split("\n").slice(0, 30),
  };
}

window.tessera = { selfCheck, toneLevels, colourAt, meetingCheck, restartIce, addAndStopVideo, muteCameraBySender, rejoinAfterLostSession };

$("join").addEventListener("submit", join);
$("leaveButton").addEventListener("click", leave);
$("micButton").addEventListener("click", () => setMuted("audio", !state.micMuted));
$("cameraButton").addEventListener("click", () => setMuted("video", !state.cameraOff));
$("shareButton").addEventListener("click", toggleShare);
$("micSelect").addEventListener("change", (e) => useDevice("audio", e.target.value));
$("cameraSelect").addEventListener("change", (e) => useDevice("video", e.target.value));
$("speakerSelect").addEventListener("change", (e) => $("mix").setSinkId?.(e.target.value).catch((error) => message(`Speakers: ${error.message}`)));
$("copyInvite").addEventListener("click", async () => {
  try { await navigator.clipboard.writeText($("invite").value); log("invite link copied"); } catch (_) {
    $("invite").select();   // no clipboard here (an insecure page): selected for Ctrl+C
  }
});
for (const preset of document.querySelectorAll("[data-preset]")) {
  preset.addEventListener("click", () => setLayout(preset.dataset.preset));
}
$("recordStart").addEventListener("click", startRecording);
$("recordStop").addEventListener("click", stopRecording);
$("editorLoad").addEventListener("click", loadEditor);
$("editorSave").addEventListener("click", saveTemplate);
window.addEventListener("pagehide", leave);

// `/?room=R&identity=I[&name=N][&token=T][&autojoin=1]` fills the form (and joins): the invite
// link, and what the interop tests open.
{
  const query = new URLSearchParams(location.search);
  for (const field of ["room", "identity", "name", "token"]) if (query.has(field)) $(field).value = query.get(field);
  if (query.get("autojoin") === "1") $("join").requestSubmit(); else listRooms();
}
