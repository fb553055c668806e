#include "textflag.h"

// func fullFence()
TEXT ·fullFence(SB),NOSPLIT,$0-0
	DMB	$0xb // ISH: orders every earlier access before every later one
	RET
