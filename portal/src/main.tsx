import { render } from 'preact'
import { signIn } from './api.js'
import { App, SignedOut } from './app.js'
import './styles.css'

// Sign-in: the portal URL carries a single-use code (?code=…). It leaves the address bar (and so the
// history entry) before anything else happens, and is exchanged once for a tenant token that lives in
// this page's memory only: a reload or a new tab needs a new portal URL from the host application.

const root = document.getElementById('app')!

async function start(): Promise<void> {
  const url = new URL(location.href)
  const theme = url.searchParams.get('theme')
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme
  const code = url.searchParams.get('code')
  if (code) {
    url.searchParams.delete('code')
    history.replaceState(null, '', url)
  }
  if (!code) {
    render(<SignedOut message="Open this portal from your application: its link signs you in." />, root)
    return
  }
  try {
    await signIn(code)
  } catch (error) {
    const status = (error as { status?: number }).status
    render(
      <SignedOut message={status === 401 ? 'This portal link has expired or was already used. Open the portal again from your application.' : `Could not sign in: ${(error as Error).message}`} />,
      root,
    )
    return
  }
  render(<App />, root)
}

void start()
