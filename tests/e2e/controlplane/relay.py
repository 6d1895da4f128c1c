"""A TCP relay: `python -m tests.e2e.controlplane.relay LISTEN_HOST:PORT TARGET_HOST:PORT`.

The control plane listens on loopback only. The real node lives in a network namespace of its
own, whose loopback is not the host's: its kubelet, kube-proxy and CoreDNS reach the apiserver
through this relay, which listens on the host's end of the link between the two (an address
only that namespace can reach) and connects to the apiserver on 127.0.0.1. TLS passes through
untouched; the relay sees bytes only.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _serve(listen: tuple[str, int], target: tuple[str, int]) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    server = await asyncio.start_server(handle, *listen)
    print(f"relaying {listen[0]}:{listen[1]} -> {target[0]}:{target[1]}", flush=True)
    async with server:
        await server.serve_forever()


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tests.e2e.controlplane.relay LISTEN:PORT TARGET:PORT")
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(_address(argv[0]), _address(argv[1])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
