/** @type {import('next').NextConfig} */
const nextConfig = {
  // Loaded by Node at run time, not bundled: outflow finds its migrations and the portal's files beside its
  // own modules, and the database drivers are native (better-sqlite3) or Node-only (postgres).
  serverExternalPackages: ['outflow', 'better-sqlite3', 'postgres'],
  // The portal's page is the directory URL /portal/ (its assets are relative), and outflow.fetch redirects
  // /portal there: Next's own redirect of /portal/ to /portal would loop with it.
  skipTrailingSlashRedirect: true,
}

export default nextConfig
