// The basic partial bundle (scatter, bar, pie) is plotly.js with fewer traces: its typings.
declare module 'plotly.js-basic-dist-min' {
  const Plotly: typeof import('plotly.js');
  export default Plotly;
}
