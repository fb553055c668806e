#include "textflag.h"

// func fullFence()
TEXT ·fullFence(SB),NOSPLIT,$0-0
	MFENCE
	RET
