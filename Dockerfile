# syntax=docker/dockerfile:1
#
# sre-agent container image.
#   docker build -t sre-agent .
#   docker run -d -p 8787:8787 -v sre-agent-data:/data \
#     -v "$PWD/config.toml:/etc/sre-agent/config.toml:ro" sre-agent
# Configuration: /etc/sre-agent/config.toml when mounted (the working directory's
# config.toml is read by default), otherwise built-in defaults; SRE_AGENT_<SECTION>__<KEY>
# environment variables override both, and every secret has a *_file variant for Docker
# secrets (e.g. SRE_AGENT_WEBHOOK__TOKEN_FILE=/run/secrets/webhook_token).
# The image listens on 0.0.0.0, so the API always needs a token: set
# SRE_AGENT_SERVER__API_TOKEN (or _FILE), or the daemon generates one in /data/api-token
# (mode 0600) and logs that path; `docker exec <container> sre-agent ask …` reads it there.

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
# The registry and target caches persist across builds with BuildKit.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked --bin sre-agent \
    && install -D -m 0755 target/release/sre-agent /out/usr/local/bin/sre-agent \
    && /out/usr/local/bin/sre-agent --version \
    && install -d -m 0750 -o 65532 -g 65532 /out/data \
    && install -d -m 0755 /out/etc/sre-agent/runbooks \
    && cp -r runbooks/. /out/etc/sre-agent/runbooks/

# glibc from Debian 12 (as the builder), CA certificates, no shell, uid/gid 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
LABEL org.opencontainers.image.title="sre-agent" \
      org.opencontainers.image.description="Alert investigations, weekly reliability reports and self-instrumentation for homelabs" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/usr/local/bin/sre-agent /usr/local/bin/sre-agent
COPY --from=build /out/etc/sre-agent /etc/sre-agent
COPY --from=build --chown=65532:65532 /out/data /data
ENV SRE_AGENT_SERVER__LISTEN=0.0.0.0:8787 \
    SRE_AGENT_SERVER__DATA_DIR=/data \
    SRE_AGENT_RUNBOOKS__DIR=/etc/sre-agent/runbooks
WORKDIR /etc/sre-agent
VOLUME ["/data"]
EXPOSE 8787
USER 65532:65532
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/sre-agent", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/sre-agent"]
CMD ["serve"]
