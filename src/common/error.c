#include <errno.h>

#include <dwork/error.h>

static const char *const err_msgs[] = {
#define DW_XX_MSG(name, msg) msg,
    DW_ERR_MAP(DW_XX_MSG)
#undef DW_XX_MSG
};

DW_API const char *
dw_strerror(int err)
{
	unsigned i = err < 0 ? 0u - (unsigned)err : (unsigned)err;
	if (i >= DW_ERR_COUNT)
		return "unknown error";
	return err_msgs[i];
}

DW_API dw_err
dw_err_from_errno(int errnum)
{
	switch (errnum) {
	case 0:
		return DW_OK;
	case EINVAL:
		return DW_EINVAL;
	case ENOMEM:
		return DW_ENOMEM;
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return DW_ENOSPC;
	case EEXIST:
		return DW_EEXIST;
	case ENOENT:
	case ENOTDIR:
		return DW_ENOENT;
	case EACCES:
	case EPERM:
	case EROFS:
		return DW_EACCES;
	case ETIMEDOUT:
		return DW_ETIMEDOUT;
	case ECONNRESET:
	case EPIPE:
	case ECONNREFUSED:
		return DW_ECLOSED;
	default:
		return DW_EIO;
	}
}
