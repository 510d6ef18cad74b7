# amserver image: a static binary on scratch (no base image to pull).
# Build context is the repository root; the Go toolchain runs on the host
# (make image), so the image needs no registry at all.
FROM scratch
COPY bin/amserver-linux /amserver
EXPOSE 7070 7071 7072 7072/udp
ENTRYPOINT ["/amserver"]
CMD ["agent", "--help"]
