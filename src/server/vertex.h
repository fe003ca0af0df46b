// Vertex AI's prediction protocol (vertex/routes_predict.cpp), on when the container runs with
// AIP_MODE=PREDICTION as Vertex AI starts custom containers: what http_server.cpp and the /health route ask of it.
#pragma once

#include <string>

#include "core/status.h"
#include "server/http_server.h"

namespace lazyslot::server {

// POST AIP_PREDICT_ROUTE (default /predict); an error for a route that clashes with the server's own. Nothing
// without AIP_MODE=PREDICTION.
Status RegisterVertexRoutes(HttpServer::State& st);
int VertexPort(int port);         // AIP_HTTP_PORT under AIP_MODE=PREDICTION, else `port`
std::string VertexHealthRoute();  // AIP_HEALTH_ROUTE under AIP_MODE=PREDICTION (answered as /health), else ""

}  // namespace lazyslot::server
