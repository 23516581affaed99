"""The console's icon at `/favicon.ico`, which browsers ask every site for: a small SVG, cacheable, and
served without the access token (it tells nothing the login page does not), so no page, the login and
refusal pages included, leaves a 404 in the browser or the log."""

from __future__ import annotations

from aiohttp import web

PATH = "/favicon.ico"
ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="6" fill="#234"/>'
    '<path d="M7 8h18v12H15l-6 5v-5H7z" fill="#fff"/></svg>'
)
CACHE = "public, max-age=86400"

routes = web.RouteTableDef()


@routes.get(PATH)
async def favicon(_request: web.Request) -> web.Response:
    """The icon, as SVG."""
    return web.Response(text=ICON, content_type="image/svg+xml", headers={"Cache-Control": CACHE})
