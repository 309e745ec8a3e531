# herald as a container: a static binary (the SQLite driver is pure Go, so
# no C library is needed) on a distroless base, run as a non-root user.
#
#   docker build -t herald .
#   docker run -p 8080:8080 -v herald-data:/data herald
#
# The first start prints the owner's password and API token once (see the
# README); compose.yaml runs two processes on PostgreSQL.

FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
COPY webhook/go.mod webhook/
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/heraldhq/herald/internal/server.Version=${VERSION}" \
      -o /out/herald ./cmd/herald \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/herald /herald
# SQLite's file and its key file live here; mount a volume to keep them.
COPY --from=build --chown=nonroot:nonroot /out/data /data
USER nonroot:nonroot
EXPOSE 8080
ENV HERALD_ADDR=0.0.0.0:8080 \
    HERALD_DATABASE_URL=sqlite:/data/herald.db
ENTRYPOINT ["/herald"]
CMD ["serve"]
