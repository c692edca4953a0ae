# Catalog server image: build the binary, then ship it alone on a small base, as a non-root
# user. Put a file-based catalog at /configs (e.g. FROM this image, ADD catalog /configs) and
# the default command serves it with a warm-start cache in /tmp/cache.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY crates crates
COPY src src
# Cargo.toml names the benchmarks; they are not built, but cargo wants their files.
COPY benches benches
RUN cargo build --release --locked && strip target/release/olm-registry

FROM debian:bookworm-slim
COPY --from=build /src/target/release/olm-registry /usr/bin/olm-registry
# OLM probes catalog pods with grpc_health_probe; the binary answers to that name too.
RUN ln -s /usr/bin/olm-registry /bin/grpc_health_probe
# OLM's bundle unpack Job runs `opm alpha bundle extract` in its --opmImage: this image can be it.
RUN ln -s /usr/bin/olm-registry /bin/opm
RUN mkdir -p /configs /tmp/cache && chown 65532:65532 /tmp/cache
USER 65532:65532
EXPOSE 50051
LABEL operators.operatorframework.io.index.configs.v1=/configs
ENTRYPOINT ["olm-registry"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]
