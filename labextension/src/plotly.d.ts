// plotly.js's partial bundles ship no types; chart.ts describes the few calls it makes (IPlotly).
declare module 'plotly.js-basic-dist-min';
