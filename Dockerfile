# Outflow as a service: `outflow serve` on port 3000, SQLite in the /data volume unless DATABASE_URL
# points at Postgres (see compose.yaml and README, "Running the service").
#   docker build -t outflow:local .
#   docker run --rm -p 127.0.0.1:3000:3000 -e OUTFLOW_API_KEY=… -v outflow-data:/data outflow:local
ARG NODE_VERSION=22

# 1. Build and pack the package from this checkout, as `npm publish` would.
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# The build runs no native module: install scripts (better-sqlite3's compile) are skipped here.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build && npm pack --pack-destination /tmp && mv /tmp/outflow-*.tgz /tmp/outflow.tgz

# 2. Install the tarball as a consumer would: both storage drivers and the OpenTelemetry SDK, nothing else.
FROM node:${NODE_VERSION}-bookworm-slim AS install
WORKDIR /app
# better-sqlite3 compiles from source where no prebuilt binary matches.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /tmp/outflow.tgz /tmp/outflow.tgz
RUN echo '{ "name": "outflow-service", "private": true }' > package.json \
 && npm install --omit=dev --no-audit --no-fund /tmp/outflow.tgz \
      better-sqlite3@^12.11.1 postgres@^3.4.9 \
      @opentelemetry/api@^1.9.1 @opentelemetry/context-async-hooks@^2.12.0 \
      @opentelemetry/exporter-trace-otlp-http@^0.223.1 @opentelemetry/exporter-metrics-otlp-http@^0.223.0 \
      @opentelemetry/exporter-prometheus@^0.223.0 \
      @opentelemetry/resources@^2.12.0 @opentelemetry/sdk-metrics@^2.12.1 @opentelemetry/sdk-trace-base@^2.12.1 \
 && npm cache clean --force

# 3. The runtime: node_modules and Node, no compilers, as the unprivileged `node` user.
FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    OUTFLOW_SQLITE_PATH=/data/outflow.db
WORKDIR /app
COPY --from=install /app /app
RUN mkdir /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 3000
# node:*-slim has no curl or wget: Node's own fetch asks the service.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/app/node_modules/.bin/outflow"]
CMD ["serve"]
