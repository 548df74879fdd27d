// What a hostile Surface tries to reach the network by WebRTC, which CSP does not govern
// (issue 27, finding 4; tests/browser/test_surface_network_e2e.py). `window.netAttack(cfg)`
// tries every way this realm, its child frames and a worker give to an RTCPeerConnection whose STUN
// (UDP) and TURN (TCP) servers are the test's listeners, and resolves to one line per way:
// "absent", "blocked: <error>", or "started" (gathering began: the network was reached).
// Loaded in a child frame named "net-child:<cfg>", it tries its own realm and tells its parent.
(function () {
  "use strict";
  const CHILD = "net-child:";

  function iceServers(cfg) {
    return [
      { urls: `stun:127.0.0.1:${cfg.udp}` },
      // The username is what would carry data out.
      { urls: `turn:127.0.0.1:${cfg.tcp}?transport=tcp`, username: "exfil-secret", credential: "x" },
    ];
  }

  function tryConstructor(label, PC, cfg) {
    if (typeof PC !== "function") return Promise.resolve(`${label}: absent`);
    try {
      const pc = new PC({ iceServers: iceServers(cfg), iceCandidatePoolSize: 1 });
      pc.createDataChannel("x");
      return pc
        .createOffer()
        .then((offer) => pc.setLocalDescription(offer))
        .then(
          () => `${label}: started`,
          (error) => `${label}: blocked: ${error.name}`,
        );
    } catch (error) {
      return Promise.resolve(`${label}: blocked: ${error.name}`);
    }
  }

  // Every global of this realm whose name says WebRTC, and the ways back to a constructor.
  function inThisRealm(label, cfg) {
    const tries = [
      tryConstructor(`${label} RTCPeerConnection`, window.RTCPeerConnection, cfg),
      tryConstructor(`${label} webkitRTCPeerConnection`, window.webkitRTCPeerConnection, cfg),
    ];
    let viaChannel;
    try {
      const channel = window.RTCDataChannel;
      viaChannel = channel && Object.getPrototypeOf(channel.prototype).constructor;
      viaChannel = viaChannel && viaChannel.name === "RTCPeerConnection" ? viaChannel : undefined;
    } catch (error) {
      viaChannel = undefined;
    }
    tries.push(tryConstructor(`${label} via RTCDataChannel`, viaChannel, cfg));
    for (const name of Object.getOwnPropertyNames(window)) {
      if (/PeerConnection$/i.test(name) && !/^(webkit)?RTCPeerConnection$/.test(name)) {
        tries.push(tryConstructor(`${label} ${name}`, window[name], cfg));
      }
    }
    return Promise.all(tries);
  }

  function childFrame(make) {
    const frame = document.createElement("iframe");
    make(frame);
    document.body.append(frame);
    return frame;
  }

  // A fresh about:blank child: its globals are a realm this script did not run in.
  function blankChild(cfg) {
    const frame = childFrame(() => {});
    let PC;
    try {
      PC = frame.contentWindow.RTCPeerConnection;
    } catch (error) {
      return Promise.resolve(`about:blank child: blocked: ${error.name}`);
    }
    return tryConstructor("about:blank child", PC, cfg);
  }

  // A worker of its own (no WebRTC in a worker's realm, and its CSP lets none start).
  function worker() {
    return new Promise((resolve) => {
      let started;
      try {
        const code = new Blob(["postMessage(typeof RTCPeerConnection)"], { type: "text/javascript" });
        started = new Worker(URL.createObjectURL(code));
      } catch (error) {
        resolve(`worker: blocked: ${error.name}`);
        return;
      }
      started.onmessage = (event) => resolve(`worker: RTCPeerConnection is ${event.data}`);
      started.onerror = () => resolve("worker: blocked");
    });
  }

  // A srcdoc child (its CSP's frame-src does not stop one) running this very script.
  function srcdocChild(cfg) {
    return new Promise((resolve) => {
      const frame = childFrame((f) => {
        f.name = CHILD + JSON.stringify(cfg);
        f.srcdoc = `<script src="${new URL("net.js", location.href).href}"></scr` + "ipt>";
      });
      window.addEventListener("message", function told(event) {
        if (event.source !== frame.contentWindow || !Array.isArray(event.data.netChild)) return;
        window.removeEventListener("message", told);
        resolve(event.data.netChild);
      });
    });
  }

  if (window.name.startsWith(CHILD)) {
    const cfg = JSON.parse(window.name.slice(CHILD.length));
    inThisRealm("srcdoc child", cfg)
      .then((lines) => {
        // A document written anew: the same window, its globals as they were.
        document.open();
        document.write("<p>rewritten</p>");
        document.close();
        const again = tryConstructor("srcdoc child after document.write", window.RTCPeerConnection, cfg);
        return again.then((line) => lines.concat([line]));
      })
      .then((lines) => window.parent.postMessage({ netChild: lines }, "*"));
    return;
  }

  window.netAttack = (cfg) =>
    Promise.all([inThisRealm("Surface", cfg), blankChild(cfg), srcdocChild(cfg), worker()]).then((all) =>
      all.flat(),
    );
})();
