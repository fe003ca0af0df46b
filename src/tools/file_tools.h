// The file tools: read_file, file_glob_search, grep_search, write_file and edit_file, every path taken
// through the confinement of confine.h. Internal to the tools layer (RunBuiltinTool dispatches to them).
#pragma once

#include "core/status.h"
#include "tools/builtin_tools.h"
#include "tools/confine.h"

namespace lazyslot::tools::internal {

// ---- the tools. Each returns the result JSON, a {"error"} JSON, or a Status for malformed params.

Result<Json> ReadFileTool(const BuiltinToolsConfig& config, const Place& place, const Json& p);

Result<Json> GlobTool(const BuiltinToolsConfig& config, const Place& place, const Json& p);

Result<Json> GrepTool(const BuiltinToolsConfig& config, const Place& place, const Json& p);

Result<Json> WriteFileTool(const Place& place, const Json& p);

// Exact replacements, each old_text unique in the original content; the edits must not overlap.
Result<Json> EditFileTool(const Place& place, const Json& p);

}  // namespace lazyslot::tools::internal
