# A catalog image on top of the olm-registry base image (the repository's Dockerfile): the
# file-based catalog at /configs and its index pre-built at /tmp/cache, so that the pod starts
# warm (no ingest at start-up; the index is only read, so it may stay on a read-only root).
#   docker build -f deploy/catalog.Dockerfile -t registry.example.com/my-catalog:latest .
FROM olm-registry:latest
ADD catalog /configs
RUN ["olm-registry", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]
