// Stellar's run table and comparison views (listens for stellar:render).
