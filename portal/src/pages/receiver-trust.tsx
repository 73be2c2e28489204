import { apiBase } from '../api.js'
import { copyText } from '../components/copy.js'
import { authenticationSummary, compatiblePreset, presetLabels, schemeLabels, signingScheme, verifySnippets } from '../receiver-trust.js'
import type { Destination } from '../types.js'

// A webhook's signatures and authentication at a glance, with the key set's URL and how to verify each signature.
// Edited with the destination's other settings (the Edit form); secrets stay masked as the API returns them.

/** The public key set of the engine, as the receiver reaches it (beside the API the portal uses). */
export function keySetUrl(): string {
  return new URL(`${apiBase}/signing-keys`, location.href).href
}

export function ReceiverTrust({ destination }: { destination: Destination }) {
  const scheme = signingScheme(destination)
  const preset = compatiblePreset(destination)
  const url = keySetUrl()
  return (
    <section class="trust" aria-labelledby="trust-title">
      <h2 id="trust-title">Signatures and authentication</h2>
      <dl class="settings">
        <dt>Signing scheme</dt>
        <dd>{schemeLabels[scheme]}</dd>
        <dt>Compatible signature</dt>
        <dd>
          {preset ? (presetLabels[preset] ?? preset) : 'None'}
          {preset && destination.credentials.compatible_signature_secret === undefined && <span class="muted"> (with the signing secret)</span>}
        </dd>
        <dt>Authentication</dt>
        <dd>
          <ul class="plain-list">
            {authenticationSummary(destination.credentials).map((line) => (
              <li key={line}>{line}</li>
            ))}
          </ul>
        </dd>
        <dt>Key set URL</dt>
        <dd>
          <div class="secret">
            <code class="key-set-url">{url}</code>
            <button type="button" class="button small" aria-label="Copy the key set URL" onClick={() => copyText(url, 'Key set URL')}>
              Copy
            </button>
          </div>
          {scheme === 'hmac' && <p class="muted small">The public Ed25519 keys (JWK Set), for the ed25519 and both schemes.</p>}
        </dd>
      </dl>
      <h3>How to verify</h3>
      {verifySnippets(destination, url).map((snippet) => (
        <figure class="snippet" key={snippet.title}>
          <figcaption>{snippet.title}</figcaption>
          <pre tabIndex={0} aria-label={`Snippet: ${snippet.title}`}>
            <code>{snippet.code}</code>
          </pre>
        </figure>
      ))}
    </section>
  )
}
