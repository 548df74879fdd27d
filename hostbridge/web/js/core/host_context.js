// The MCP Apps `hostContext` a Surface is given at `ui/initialize` (core/bridge.js), read from
// the Shell as it is, never made up: its theme (the one `prefers-color-scheme` decides, as
// shell.css does), its style variables under the spec's names (`STYLE_VARIABLES`: each mapped
// from one of shell.css's own custom properties and read from the computed style, so a change
// there reaches the apps), the frame's width, the browser's locale, time zone and input
// devices. `watchHostContext` calls back with the fields that changed (the theme and styles
// when the colour scheme flips; the container when the frame's width does, or in fullscreen
// its height), which the bridge
// sends as `ui/notifications/host-context-changed`.

export const DISPLAY_MODES = ["inline", "fullscreen"]; // what the Shell really does
// What the runtime serves of an MCP App's requests (hostbridge/_surface_mcp.py), under the
// spec's names in `hostCapabilities`: its own app's resources, its context for the Agent
// (text and structured content), a file for the user to save.
export const SERVED_CAPABILITIES = {
  serverResources: {},
  updateModelContext: { text: {}, structuredContent: {} },
  downloadFile: {},
};
export const CONTEXT_METHOD = "ui/notifications/host-context-changed";
const MAX_HEIGHT = 4000; // core/bridge.js clamps a Surface's height to this
const HOST_NAME = "LineUp Shell";

// The spec's variable → shell.css's own custom property (or, for the fonts and sizes the
// Shell sets on :root directly, a computed property of :root).
const STYLE_VARIABLES = {
  "--color-background-primary": "--surface",
  "--color-background-secondary": "--bg",
  "--color-background-inverse": "--text",
  "--color-background-info": "--accent-bg",
  "--color-background-danger": "--error-bg",
  "--color-background-success": "--ok-bg",
  "--color-background-warning": "--warn-bg",
  "--color-background-disabled": "--off-bg",
  "--color-text-primary": "--text",
  "--color-text-secondary": "--muted",
  "--color-text-inverse": "--surface",
  "--color-text-info": "--accent",
  "--color-text-danger": "--error",
  "--color-text-success": "--ok",
  "--color-text-warning": "--warn",
  "--color-text-disabled": "--off",
  "--color-border-primary": "--border",
  "--color-ring-primary": "--accent",
  "--border-radius-lg": "--radius",
  "--shadow-sm": "--shadow",
  "--font-sans": "font-family",
  "--font-text-md-size": "font-size",
  "--font-text-md-line-height": "line-height",
};

const darkQuery = () => window.matchMedia("(prefers-color-scheme: dark)");
export const currentTheme = () => (darkQuery().matches ? "dark" : "light");

export function styleVariables() {
  const computed = window.getComputedStyle(document.documentElement);
  const variables = {};
  for (const [name, property] of Object.entries(STYLE_VARIABLES)) {
    const value = computed.getPropertyValue(property).trim();
    if (value) variables[name] = value;
  }
  return variables;
}

// Inline, the frame is as tall as its page, up to MAX_HEIGHT; fullscreen, as tall as the stage.
export function containerDimensions(iframe, displayMode) {
  const width = Math.max(0, Math.round(iframe.clientWidth));
  return displayMode === "fullscreen"
    ? { width, height: Math.max(0, Math.round(iframe.clientHeight)) }
    : { width, maxHeight: MAX_HEIGHT };
}

export function hostContext(iframe, displayMode) {
  const coarse = window.matchMedia("(pointer: coarse)").matches;
  return {
    theme: currentTheme(),
    styles: { variables: styleVariables() },
    displayMode,
    availableDisplayModes: DISPLAY_MODES,
    containerDimensions: containerDimensions(iframe, displayMode),
    locale: navigator.language || "en",
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC",
    userAgent: HOST_NAME,
    platform: "web",
    deviceCapabilities: {
      touch: coarse || navigator.maxTouchPoints > 0,
      hover: window.matchMedia("(hover: hover)").matches,
    },
    // The Shell draws no notch or system bar over a Surface.
    safeAreaInsets: { top: 0, right: 0, bottom: 0, left: 0 },
  };
}

// Calls `onChange(fields)` with what changed since `told` (the container, as last told; the
// display mode in force is `mode()`); returns the function that stops watching.
export function watchHostContext(iframe, told, mode, onChange) {
  let last = JSON.stringify(told);
  const query = darkQuery();
  const onScheme = () => onChange({ theme: currentTheme(), styles: { variables: styleVariables() } });
  query.addEventListener("change", onScheme);
  const observer =
    typeof ResizeObserver === "function"
      ? new ResizeObserver(() => {
          const dims = containerDimensions(iframe, mode());
          const now = JSON.stringify(dims);
          if (now === last || dims.width === 0) return; // unchanged, or being hidden
          last = now;
          onChange({ containerDimensions: dims });
        })
      : null;
  observer?.observe(iframe);
  return () => {
    query.removeEventListener("change", onScheme);
    observer?.disconnect();
  };
}
