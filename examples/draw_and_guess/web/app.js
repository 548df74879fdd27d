// Draw and guess's Surface. It speaks to the Shell through the bridge client (window.LineUpBridge):
// the handshake first, then the app's state arrives in `lineup/notifications/state`, and the
// button sends the app its one declared event, `wave`. Text only: no innerHTML anywhere.
(function () {
  "use strict";

  const bridge = window.LineUpBridge;
  const greeting = document.getElementById("greeting");
  const status = document.getElementById("status");
  const wave = document.getElementById("wave");

  function show(state) {
    if (typeof state.greeting === "string") greeting.textContent = state.greeting;
    status.textContent = state.waved === true ? "The app saw you wave." : "";
  }

  function reportSize() {
    bridge.notify("ui/notifications/size-changed", {
      height: document.documentElement.scrollHeight,
    });
  }

  bridge.on("lineup/notifications/state", (params) => show(params.state || {}));
  bridge.on("ui/resource-teardown", () => ({}));

  wave.addEventListener("click", () => {
    bridge.request("lineup/event", { name: "wave", data: {} }).catch((err) => {
      status.textContent = "Not sent (" + (err.code || "error") + ").";
    });
  });

  async function start() {
    try {
      const init = await bridge.initialize({ name: "draw-and-guess", version: "0.1.0" });
      show((init.hostContext && init.hostContext.lineup && init.hostContext.lineup.state) || {});
      document.body.dataset.state = "ready";
      reportSize();
    } catch (err) {
      document.body.dataset.state = "failed";
      status.textContent = "Could not connect (" + (err.code || "error") + ").";
    }
  }

  start();
})();
