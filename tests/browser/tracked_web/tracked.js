// A Surface on the runtime's own bridge client (`_lineup/bridge.js`), for the trackSize test
// of tests/browser/test_surface_render.py: the test starts it (`window.start()`), then
// changes its size, or not, from inside the frame.
(function () {
  "use strict";
  window.start = async function () {
    await window.LineUpBridge.initialize({ name: "tracked", version: "1.0.0" });
    window.LineUpBridge.trackSize();
  };
  // Resolves once `count` animation frames have run (what a coalesced report waits for).
  window.afterFrames = function (count) {
    return new Promise(function (resolve) {
      (function next(left) {
        if (left === 0) resolve();
        else requestAnimationFrame(function () { next(left - 1); });
      })(count);
    });
  };
  document.addEventListener("DOMContentLoaded", function () {
    document.body.setAttribute("data-ready", "1");
  });
})();
