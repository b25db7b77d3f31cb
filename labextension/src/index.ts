/**
 * jupyter-gpumem's JupyterLab plugins:
 * - `jupyter-gpumem:plugin`: the followed kernels (follower.ts) and the settings (schema/plugin.json);
 * - `jupyter-gpumem:server-kernels`: every kernel of the server and its GPU memory (the server's API);
 * - `jupyter-gpumem:sidebar`: the "GPU Memory" side panel (right, restored), its palette command;
 * - `jupyter-gpumem:status-bar`: the status-bar item, where there is a status bar;
 * - `jupyter-gpumem:inline`: the inline view's module (`%gpumem show`), offered to its loader so that a view
 *   in this page takes it from here, plotly in the same chunk as the sidebar's (loader.ts).
 * Only INotebookTracker is required; the shell is used through JupyterFrontEnd's own API, so the
 * same plugins fit other Jupyter frontends (Notebook 7's right panel, no status bar).
 */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { translateSchema } from './format/settings';
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { LabIcon } from '@jupyterlab/ui-components';

import { IKernelFollower, KernelFollower } from './model/follower';
import { noticeText, panelTitle, uiText } from './format/panel';
import { printable } from './format/printable';
import { GpuMemPanel } from './widgets/panel';
import { readSettings } from './wire/protocol';
import { IServerKernels, ServerKernels } from './model/serverkernels';
import { GpuMemStatus } from './widgets/statusbar';
import inlineView from './widgets/inline';
import { IInlineModule, LABEXTENSION_KEY } from './widgets/loader';

const PLUGIN_ID = 'jupyter-gpumem:plugin';
const COMMAND = 'jupyter-gpumem:open';
const PANEL_ID = 'jupyter-gpumem-panel';
const DOMAIN = 'jupyter_gpumem';

const gpuIcon = new LabIcon({
  name: 'jupyter-gpumem:gpu',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16">' +
    '<path class="jp-icon3" fill="#616161" d="M3 7h18v10H3zM5 9v6h6V9zm8 0v2h6V9zm0 4v2h6v-2zM' +
    '5 3h2v3H5zm4 0h2v3H9zm4 0h2v3h-2zm4 0h2v3h-2zM5 18h2v3H5zm4 0h2v3H9zm4 0h2v3h-2zm4 0h2v3h-2z"/>' +
    '</svg>'
});

const kernels: JupyterFrontEndPlugin<KernelFollower> = {
  id: PLUGIN_ID,
  description:
    "The active notebook's kernel and its GPU memory stream, with the stream's settings.",
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ISettingRegistry, ITranslator],
  provides: IKernelFollower,
  activate: async (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    registry: ISettingRegistry | null,
    translator: ITranslator | null
  ) => {
    translator ??= nullTranslator;
    const trans = translator.load(DOMAIN);
    // The page's language for the whole life of the page (changing it reloads the page).
    const follower = new KernelFollower(
      tracker,
      readSettings(null),
      translator.languageCode
    );
    // The server's word about a kernel (its idle culler): a toast that stays until dismissed, naming the
    // notebook, since "this kernel" may not be the one in front of the user.
    follower.noticed.connect((_, { notice, kernel }) => {
      const notebook = tracker.find(
        panel => panel.sessionContext.session?.kernel === kernel
      );
      const where = notebook ? `${printable(notebook.context.path)}: ` : '';
      Notification.warning(where + noticeText(notice, trans), {
        autoClose: false
      });
    });
    if (registry) {
      registry.transform(PLUGIN_ID, {
        fetch: plugin => ({
          ...plugin,
          schema: translateSchema(plugin.schema, trans)
        })
      });
      // Not awaited: the views appear at once; the settings follow when loaded.
      registry
        .load(PLUGIN_ID)
        .then(loaded => {
          const apply = () =>
            follower.configure(readSettings(loaded.composite));
          loaded.changed.connect(apply);
          apply();
        })
        .catch(error =>
          console.warn(`jupyter-gpumem: settings could not be loaded: ${error}`)
        );
    }
    return follower;
  }
};

const serverKernels: JupyterFrontEndPlugin<ServerKernels> = {
  id: 'jupyter-gpumem:server-kernels',
  description:
    "Every kernel of this server and its GPU memory, from the server extension's API, named from the sessions.",
  autoStart: true,
  requires: [IKernelFollower],
  provides: IServerKernels,
  activate: (app: JupyterFrontEnd, follower: KernelFollower) => {
    const kernels = new ServerKernels(app.serviceManager);
    const follow = () => {
      kernels.current = follower.current?.kernel.id ?? null;
    };
    follower.changed.connect(follow);
    follow();
    return kernels;
  }
};

const sidebar: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-gpumem:sidebar',
  description:
    "GPU memory of the notebook's kernel against its budget, live, in a side panel.",
  autoStart: true,
  requires: [IKernelFollower],
  optional: [ICommandPalette, ILayoutRestorer, ITranslator, IServerKernels],
  activate: (
    app: JupyterFrontEnd,
    follower: KernelFollower,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    translator: ITranslator | null,
    serverKernels: ServerKernels | null
  ) => {
    translator ??= nullTranslator;
    const trans = translator.load(DOMAIN);
    const text = uiText(trans);
    const openSettings = () => {
      if (app.commands.hasCommand('settingeditor:open')) {
        // The editor's search matches titles: the schema's (schema/plugin.json), as the kernels plugin's
        // transform words it (format/settings.ts: the title in the "schema" context).
        void app.commands.execute('settingeditor:open', {
          query: trans._p('schema', 'GPU Memory')
        });
      }
    };
    const panel = new GpuMemPanel(follower, {
      translator,
      openSettings,
      serverKernels
    });
    panel.id = PANEL_ID;
    panel.title.icon = gpuIcon;
    panel.title.caption = panelTitle(trans);
    app.shell.add(panel, 'right', { rank: 900 });
    restorer?.add(panel, 'jupyter-gpumem');

    app.commands.addCommand(COMMAND, {
      label: text.command,
      caption: text.commandCaption,
      icon: gpuIcon,
      execute: () => app.shell.activateById(panel.id)
    });
    palette?.addItem({ command: COMMAND, category: text.category });
  }
};

const statusBar: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-gpumem:status-bar',
  description:
    "The active kernel's GPU memory against its budget in the status bar; a click opens the panel.",
  autoStart: true,
  requires: [IKernelFollower],
  optional: [IStatusBar, ITranslator, IServerKernels],
  activate: (
    app: JupyterFrontEnd,
    follower: KernelFollower,
    statusBar: IStatusBar | null,
    translator: ITranslator | null,
    serverKernels: ServerKernels | null
  ) => {
    if (!statusBar) {
      return; // a frontend without a status bar
    }
    const trans = (translator ?? nullTranslator).load(DOMAIN);
    const item = new GpuMemStatus(
      follower,
      trans,
      () => {
        if (app.commands.hasCommand(COMMAND)) {
          void app.commands.execute(COMMAND);
        }
      },
      serverKernels
    );
    statusBar.registerStatusItem('jupyter-gpumem:status', {
      item,
      align: 'left',
      rank: 4,
      isActive: () => item.isActive,
      activeStateChanged: item.activeStateChanged
    });
  }
};

const inline: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-gpumem:inline',
  description:
    "The inline view's module, for its loader: no second copy of it or of plotly in the page.",
  autoStart: true,
  optional: [ITranslator],
  activate: (app: JupyterFrontEnd, translator: ITranslator | null) => {
    // The view in this page words in the page's language; from the server's route or the kernel it asks
    // the kernel for its language's catalogue (inline.ts, docs/i18n-plumbing.md).
    const trans = (translator ?? nullTranslator).load(DOMAIN);
    const module: IInlineModule = {
      render: props =>
        inlineView.render({
          ...(props as Parameters<typeof inlineView.render>[0]),
          trans
        })
    };
    (globalThis as Record<symbol, unknown>)[LABEXTENSION_KEY] = module;
  }
};

export default [kernels, serverKernels, sidebar, statusBar, inline];
