/**
 * jupyter-gpumem's JupyterLab plugin: the "GPU Memory" sidebar, following the active notebook's
 * kernel. One Channel per kernel connection of every open notebook (each registers the comm
 * target); the panel shows the current notebook's one and starts its stream when visible.
 */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, IThemeManager } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { LabIcon } from '@jupyterlab/ui-components';

import { Channel } from './channel';
import { GpuMemPanel } from './panel';
import { notebookLabel } from './format';
import { readSettings } from './protocol';

const PLUGIN_ID = 'jupyter-gpumem:plugin';
const COMMAND = 'jupyter-gpumem:open';

const gpuIcon = new LabIcon({
  name: 'jupyter-gpumem:gpu',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16">' +
    '<path class="jp-icon3" fill="#616161" d="M3 7h18v10H3zM5 9v6h6V9zm8 0v2h6V9zm0 4v2h6v-2zM' +
    '5 3h2v3H5zm4 0h2v3H9zm4 0h2v3h-2zm4 0h2v3h-2zM5 18h2v3H5zm4 0h2v3H9zm4 0h2v3h-2zm4 0h2v3h-2z"/>' +
    '</svg>'
});

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    "GPU memory of the notebook's kernel against its budget, live, in a sidebar.",
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, ILayoutRestorer, ISettingRegistry, IThemeManager],
  activate: async (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    registry: ISettingRegistry | null,
    themes: IThemeManager | null
  ) => {
    const panel = new GpuMemPanel();
    panel.id = 'jupyter-gpumem-panel';
    panel.title.icon = gpuIcon;
    panel.title.caption = 'GPU Memory';
    app.shell.add(panel, 'right', { rank: 900 });
    restorer?.add(panel, 'jupyter-gpumem');

    app.commands.addCommand(COMMAND, {
      label: 'Show GPU Memory',
      caption: "This kernel's GPU memory against its budget, live",
      icon: gpuIcon,
      execute: () => app.shell.activateById(panel.id)
    });
    palette?.addItem({ command: COMMAND, category: 'GPU Memory' });
    themes?.themeChanged.connect(() => panel.themeChanged());

    let settings = readSettings(null);
    const channels = new Map<Kernel.IKernelConnection, Channel>();
    const channelFor = (kernel: Kernel.IKernelConnection): Channel => {
      let channel = channels.get(kernel);
      if (!channel) {
        channel = new Channel(kernel, settings);
        channels.set(kernel, channel);
        kernel.disposed.connect(() => {
          channels.get(kernel)?.dispose();
          channels.delete(kernel);
          follow();
        });
      }
      return channel;
    };

    const follow = () => {
      const notebook = tracker.currentWidget;
      const kernel = notebook?.sessionContext.session?.kernel ?? null;
      const channel = kernel ? channelFor(kernel) : null;
      const label = notebook
        ? notebookLabel(
            notebook.context.path,
            kernel ? notebook.sessionContext.kernelDisplayName : null
          )
        : '';
      panel.follow(channel, label);
      if (channel && channel.state === 'idle' && panel.isVisible) {
        void channel.start();
      }
    };

    const watch = (notebook: NotebookPanel) => {
      const session = notebook.sessionContext;
      session.kernelChanged.connect((_, change) => {
        if (change.newValue) {
          channelFor(change.newValue);
        }
        if (tracker.currentWidget === notebook) {
          follow();
        }
      });
      const kernel = session.session?.kernel;
      if (kernel) {
        channelFor(kernel);
      }
    };
    tracker.forEach(watch);
    tracker.widgetAdded.connect((_, notebook) => watch(notebook));
    tracker.currentChanged.connect(follow);
    panel.shown.connect(follow);

    if (registry) {
      try {
        const loaded = await registry.load(PLUGIN_ID);
        const apply = () => {
          settings = readSettings(loaded.composite);
          channels.forEach(channel => channel.configure(settings));
        };
        loaded.changed.connect(apply);
        apply();
      } catch (error) {
        console.warn(`jupyter-gpumem: settings could not be loaded: ${error}`);
      }
    }
    follow();
  }
};

export default plugin;
