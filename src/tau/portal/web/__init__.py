"""The Stellar and portal web servers (Starlette on uvicorn), imported only by their commands."""
