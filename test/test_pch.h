#pragma once
// Precompiled header of the test binaries (compiled with -O1 -g1, so they cannot share the libraries' one):
// the libraries' precompiled header plus GoogleTest. Forced in by CMake (target_precompile_headers).
#include <gtest/gtest.h>

#include "kcm_pch.h"
