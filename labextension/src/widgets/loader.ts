/**
 * The inline view's `_esm`: the only code a view puts in the widget state (about 2 KB), so a notebook with
 * views stays light. It finds the view's module once per page and hands each output to it, from the first
 * of these that answers:
 * 1. this package's labextension, when the page has it (JupyterLab, Notebook 7): the module is already
 *    in the page, with plotly in the labextension's own chunk, the one the sidebar's chart loads;
 * 2. the server extension's static route, `<base URL>jupyter-gpumem/static/`, the page's base URL read from
 *    its configuration (so it holds behind JupyterHub's `/user/<name>/`): the module, with plotly in a chunk
 *    beside it, fetched once and kept by the browser's cache;
 * 3. the kernel (VS Code, Colab, a server without this package): the module in one file sent over the
 *    widget's comm (`module`), about 1.2 MB once per page, as the view says under its chart.
 * Bundled alone by `jlpm build:inline` (static/loader.js); jupyter_gpumem/kernel/widget.py reads it.
 */

/** The package's version (esbuild's define, from package.json): the static route's cache key. */
declare const PACKAGE_VERSION: string;

/** Where the server extension serves static/ (jupyter_gpumem/server/__init__.py STATIC_PATH). */
const ROUTE = 'jupyter-gpumem/static/';
/** The global the labextension sets to the module it bundles (labextension/src/index.ts). */
export const LABEXTENSION_KEY = Symbol.for('jupyter-gpumem.inline');

/** The part of an anywidget model the loader uses. */
interface IModel {
  on(
    event: 'msg:custom',
    callback: (content: unknown, buffers?: DataView[]) => void
  ): void;
  off(
    event: 'msg:custom',
    callback: (content: unknown, buffers?: DataView[]) => void
  ): void;
  send(content: Record<string, unknown>): void;
}

/** How the module came: what the view says under its chart when it cost the notebook's connection. */
export interface ISource {
  how: 'labextension' | 'server' | 'kernel';
  bytes: number;
}

export interface IInlineModule {
  render(props: {
    model: unknown;
    el: HTMLElement;
    source?: ISource;
  }): (() => void) | void;
}

interface ILoaded {
  module: IInlineModule;
  source: ISource;
}

/** Where the module's promise is kept, shared by every view on the page (each loads this file anew:
 * anywidget imports `_esm` per model). Made when a view renders: the labextension imports this file
 * for LABEXTENSION_KEY alone, without PACKAGE_VERSION defined. */
function pageKey(): symbol {
  return Symbol.for(`jupyter-gpumem.loader@${PACKAGE_VERSION}`);
}

/** The server's base URL, from the page's configuration (JupyterLab, Notebook 7); null where there is none. */
function baseUrl(): string | null {
  const data = document.getElementById('jupyter-config-data');
  try {
    const base = JSON.parse(data?.textContent ?? 'null')?.baseUrl;
    return typeof base === 'string' ? new URL(base, location.href).href : null;
  } catch {
    return null;
  }
}

function addStyle(id: string, make: () => HTMLElement): void {
  if (!document.getElementById(id)) {
    const node = make();
    node.id = id;
    document.head.appendChild(node);
  }
}

async function fromServer(base: string): Promise<ILoaded> {
  const url = new URL(ROUTE, base).href;
  const module = (await import(
    /* webpackIgnore: true */ `${url}inline.js?v=${PACKAGE_VERSION}`
  )) as { default: IInlineModule };
  addStyle('jupyter-gpumem-inline-style', () => {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = `${url}base.css?v=${PACKAGE_VERSION}`;
    return link;
  });
  return { module: module.default, source: { how: 'server', bytes: 0 } };
}

/** The module in one file, from the kernel: asked once, answered when the kernel is free. */
function fromKernel(model: IModel): Promise<ILoaded> {
  return new Promise((resolve, reject) => {
    const answer = async (content: unknown, buffers?: DataView[]) => {
      if ((content as { type?: unknown })?.type !== 'module') {
        return;
      }
      model.off('msg:custom', answer);
      const [esm, css] = (buffers ?? []).map(b => new TextDecoder().decode(b));
      if (!esm) {
        reject(new Error('jupyter-gpumem: the kernel sent no module'));
        return;
      }
      addStyle('jupyter-gpumem-inline-style', () => {
        const style = document.createElement('style');
        style.textContent = css ?? '';
        return style;
      });
      const url = URL.createObjectURL(
        new Blob([esm], { type: 'text/javascript' })
      );
      try {
        const module = (await import(/* webpackIgnore: true */ url)) as {
          default: IInlineModule;
        };
        const bytes = esm.length + (css?.length ?? 0);
        resolve({ module: module.default, source: { how: 'kernel', bytes } });
      } catch (error) {
        reject(error);
      } finally {
        URL.revokeObjectURL(url);
      }
    };
    model.on('msg:custom', answer);
    model.send({ type: 'module' });
  });
}

async function load(model: IModel): Promise<ILoaded> {
  const bundled = (globalThis as Record<symbol, unknown>)[LABEXTENSION_KEY];
  if (bundled) {
    return {
      module: bundled as IInlineModule,
      source: { how: 'labextension', bytes: 0 }
    };
  }
  const base = baseUrl();
  if (base !== null) {
    try {
      return await fromServer(base);
    } catch {
      // No route: a server without this package (or of a release before it). The kernel has it.
    }
  }
  return fromKernel(model);
}

async function render(props: {
  model: IModel;
  el: HTMLElement;
}): Promise<(() => void) | void> {
  const page = globalThis as Record<symbol, Promise<ILoaded> | undefined>;
  const key = pageKey();
  const loading = (page[key] ??= load(props.model));
  let loaded: ILoaded;
  try {
    loaded = await loading;
  } catch (error) {
    delete page[key]; // the next view tries again
    props.el.textContent = `jupyter-gpumem: the inline view could not load (${String(error)}).`;
    return;
  }
  return loaded.module.render({ ...props, source: loaded.source });
}

export default { render };
