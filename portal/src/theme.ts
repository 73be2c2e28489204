// Light or dark: `?theme=` of the portal URL (the server already set it on <html> for the first paint),
// else the system's preference; the toggle switches it for this page.

export type Theme = 'light' | 'dark'

export function currentTheme(): Theme {
  const set = document.documentElement.dataset.theme
  if (set === 'light' || set === 'dark') return set
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'
}

export function setTheme(theme: Theme): void {
  document.documentElement.dataset.theme = theme
  const url = new URL(location.href)
  url.searchParams.set('theme', theme)
  history.replaceState(history.state, '', url)
}
