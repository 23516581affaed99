"""The admin web console: a loopback aiohttp app over the memory service functions
(`bot.web.app.build_web_app`)."""
