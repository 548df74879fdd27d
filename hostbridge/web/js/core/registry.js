// The trusted components that render an instance's view, keyed by the view's `kind`.
//
// A component is {mount(container, ctx, instanceId) → handle, update(handle, entry),
// unmount(handle), and optionally focus(handle) and release(handle)}: mounted (appending its
// node to the container) once per instance when it comes in front, updated in place from
// each new snapshot (so a progress update neither rebuilds its buttons nor moves focus), and
// unmounted when another instance takes the stage. A view of a kind nobody registered keeps
// the placeholder: a MiniApp's view never becomes markup of its own. `unmount` may return a
// node of its own that must stay a moment (a Surface answering its teardown): it removes it.

const components = new Map();

export function register(kind, component) {
  components.set(kind, component);
}

export const componentFor = (kind) => components.get(kind) ?? null;

// The one mounted component of a stage (its container), replaced as the foreground changes.
export function createStage(container, ctx) {
  let mounted = null; // {instanceId, kind, component, handle}

  function show(instanceId, entry) {
    const kind = entry === undefined ? null : entry.view.kind;
    const component = kind === null ? null : componentFor(kind);
    if (mounted !== null && (mounted.instanceId !== instanceId || mounted.kind !== kind)) clear();
    if (component === null) return false;
    if (mounted === null) {
      const handle = component.mount(container, ctx, instanceId);
      mounted = { instanceId, kind, component, handle };
    }
    component.update(mounted.handle, entry);
    return true;
  }

  function clear() {
    if (mounted === null) return;
    const leaving = mounted.component.unmount(mounted.handle);
    mounted = null;
    for (const child of [...container.children]) if (child !== leaving) child.remove();
  }

  // Something of the instance's changed besides its view (a question it asked was answered):
  // a component that holds its controls until the next snapshot lets them go.
  function poke() {
    if (mounted !== null) mounted.component.release?.(mounted.handle);
  }

  return { show, clear, poke, focus: () => mounted?.component.focus?.(mounted.handle) };
}
