import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';

/**
 * jupyter-gpumem's JupyterLab plugin. For now it only announces itself; the GPU memory
 * sidebar builds on it.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-gpumem:plugin',
  description: 'GPU memory of the notebook kernel, live, in a sidebar.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    console.log('jupyter-gpumem is activated');
  }
};

export default plugin;
