// Stellar's interactive charts (listens for stellar:render).
