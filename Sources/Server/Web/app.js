// Tessera's page: join a room with camera and microphone, see the room's composite, hear your
// mix, follow who is there. Plain browser APIs, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { pc: null, location: null, events: null, room: null, recording: null, people: new Map() };

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
  for (const type of ["joined", "left", "trackPublished", "trackEnded", "trackMuted", "trackUnmuted",
                      "activeSpeakerChanged", "layoutChanged", "recordingStarted", "recordingStopped"]) {
    state.events.addEventListener(type, (message) => {
      const event = JSON.parse(message.data);
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
      if (pc.connectionState === "failed") leave();
    };

    await pc.setLocalDescription(await pc.createOffer());
    // The host is ICE-lite and announces its own candidate: the offer needs only what is gathered.
    await new Promise((resolve) => {
      if (pc.iceGatheringState === "complete") return resolve();
      const done = () => pc.iceGatheringState === "complete" && resolve();
      pc.addEventListener("icegatheringstatechange", done);
      setTimeout(resolve, 2000);
    });
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
