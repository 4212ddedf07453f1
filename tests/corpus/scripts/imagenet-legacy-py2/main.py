# An old copy of the ImageNet example, still run on a Python 3 image: `async` is a keyword now.
import argparse
import os
import shutil

import torch

parser = argparse.ArgumentParser(description='PyTorch ImageNet Training')
parser.add_argument('--resume', default='', type=str, metavar='PATH')
best_prec1 = 0


def main():
    global args, best_prec1
    args = parser.parse_args()
    model = torch.nn.DataParallel(build()).cuda()
    optimizer = torch.optim.SGD(model.parameters(), 0.1)
    if args.resume:
        if os.path.isfile(args.resume):
            print("=> loading checkpoint '{}'".format(args.resume))
            checkpoint = torch.load(args.resume)
            best_prec1 = checkpoint['best_prec1']
            model.load_state_dict(checkpoint['state_dict'])
            optimizer.load_state_dict(checkpoint['optimizer'])
        else:
            print("=> no checkpoint found at '{}'".format(args.resume))
    for epoch in range(90):
        for input, target in loader():
            target = target.cuda(async=True)
        save_checkpoint({'epoch': epoch + 1, 'state_dict': model.state_dict(), 'optimizer': optimizer.state_dict()}, False)


def save_checkpoint(state, is_best, filename='checkpoint.pth.tar'):
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, 'model_best.pth.tar')
