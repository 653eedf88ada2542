// Starts Swagger UI on /docs from a file, not an inline script: the Content-Security-Policy
// runs no inline script (teamlore/web/security.py).
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
