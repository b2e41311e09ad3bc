// Umbrella header: every public header of the library.
#pragma once
#include "dtype.h"
#include "enum_table.h"
#include "error.h"
#include "memory/inference.h"
#include "memory/profile.h"
#include "memory/training.h"
#include "model.h"
#include "model_hf.h"
#include "model_presets.h"
#include "parse.h"
#include "report.h"
#include "units.h"
