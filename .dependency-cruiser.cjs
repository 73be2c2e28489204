// The layers of DESIGN §1 as import rules, checked by test/architecture.test.ts (so `npm test` fails on a breach):
//   (adapters, cli) -> http -> engine -> (delivery -> destinations -> net, storage) -> model -> leaf modules
// The one way down from the top: src/create-outflow.ts hands src/http's handler to the engine.
const top = '^src/(index|create-outflow|prometheus)[.]ts$'
const engine = '^src/(engine/|engine[.]ts$|options[.]ts$)'
const leaf = '^src/(errors|ids|credentials|load-peer|logger|retry-after|telemetry|tokens)[.]ts$'

const below = (name, from, forbidden) => ({
  name,
  severity: 'error',
  comment: `${name}: an import that runs up a layer`,
  from: { path: from },
  to: { path: forbidden },
})

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'an import circle', from: {}, to: { circular: true } },
    below('src-not-adapters', '^src/', '^adapters/'),
    // src/cli (the `outflow` command) is a composition root above everything: nothing imports it.
    below('cli-at-the-top', '^(adapters/|src/(?!cli/))', '^src/cli/'),
    below('http-below-top', '^src/http/', top),
    below('engine-below-http', engine, `^src/http/|${top}`),
    below('delivery-below-engine', '^src/delivery/', `^src/http/|${engine}|${top}`),
    below('destinations-below-delivery', '^src/destinations/', `^src/(http|delivery|storage)/|${engine}|${top}`),
    below('storage-below-delivery', '^src/storage/', `^src/(http|delivery|destinations|net)/|${engine}|${top}`),
    below('net-below-destinations', '^src/net/', `^src/(http|delivery|destinations|storage)/|${engine}|${top}`),
    below('model-at-the-bottom', '^src/model/', `^src/(http|delivery|destinations|storage|net)/|${engine}|${top}`),
    below('leaf-modules-import-no-layer', leaf, `^src/[^/]+/|${engine}|${top}`),
    // outflow/client runs in any fetch runtime: it is imported by nothing, and itself imports at run time only
    // its own files and the leaf modules errors.ts and retry-after.ts (types from anywhere are erased), no Node built-in.
    below('client-imported-by-none', '^(adapters/|src/(?!client/))', '^src/client/'),
    {
      name: 'client-runs-anywhere',
      severity: 'error',
      comment: 'client-runs-anywhere: outflow/client may only import its own files, errors.ts and retry-after.ts at run time',
      from: { path: '^src/client/' },
      to: { pathNot: '^src/(client/|errors[.]ts$|retry-after[.]ts$)', dependencyTypesNot: ['type-only'] },
    },
    { name: 'client-no-node-builtins', severity: 'error', comment: 'client-no-node-builtins: outflow/client runs in any fetch runtime', from: { path: '^src/client/' }, to: { dependencyTypes: ['core'] } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensionAlias: { '.js': ['.ts', '.js'] } },
  },
}
